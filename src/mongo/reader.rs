//! Reading a connection's messages within its limits: how long it may stay silent, how
//! long a message may take to arrive once it began, how large it may be (small until the
//! client has authenticated, compressed size and declared uncompressed size alike), and a
//! budget of bytes shared by every connection for the messages being read and handled at
//! once. A message is never given memory before its header has passed these checks.
//!
//! While a command runs, [`MessageReader::client_gone`] tells the connection when the
//! client closed its end, so the command can be interrupted.
//!
//! Not for: parsing a frame (`docgate_wire::decode_frame`) or replies.

use std::sync::Arc;
use std::time::Duration;

use docgate_wire::{decode_frame, op_code, Incoming, HEADER_LEN};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncReadExt, BufReader};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio::time::Instant;

/// Messages up to this size need no share of the budget (handshakes, most commands).
const UNBUDGETED_BYTES: usize = 64 * 1024;
/// The budget is counted in units of this many bytes.
const BUDGET_UNIT: usize = 1024;
/// Bytes the connection's read buffer holds (one read usually takes a whole small message).
const READ_BUFFER: usize = 16 * 1024;
/// `OP_COMPRESSED`'s fields after the header: original opcode, uncompressed size, compressor.
const COMPRESSED_PREFIX: usize = 9;

/// The bytes of incoming messages all connections may hold at once.
#[derive(Clone, Debug)]
pub struct MessageBudget {
    units: Arc<Semaphore>,
    total_units: usize,
}

impl MessageBudget {
    /// A budget of `bytes` (at least one largest message).
    pub fn new(bytes: usize) -> MessageBudget {
        let total_units = bytes.div_ceil(BUDGET_UNIT);
        MessageBudget {
            units: Arc::new(Semaphore::new(total_units)),
            total_units,
        }
    }

    /// Bytes not held by any message now.
    pub fn available_bytes(&self) -> usize {
        self.units.available_permits() * BUDGET_UNIT
    }
}

/// What one read of the limits applies to a connection now.
#[derive(Clone, Copy, Debug)]
pub struct ReadLimits {
    /// Silence allowed before a message begins (None: forever).
    pub idle: Option<Duration>,
    /// Time from a message's first byte to its last.
    pub message: Duration,
    /// Largest message (and declared uncompressed size).
    pub max_message: usize,
}

/// Why no message came.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    #[error("the client closed the connection")]
    Closed,
    #[error("no message for {0:?}")]
    Idle(Duration),
    #[error("message not complete within {0:?}")]
    Slow(Duration),
    #[error("message of {length} bytes is over the limit of {max} bytes for this connection")]
    TooLarge { length: usize, max: usize },
    #[error("message length {0} is below the header size")]
    TooShort(i64),
    #[error("i/o error: {0}")]
    Io(#[from] std::io::Error),
}

/// One message and its share of the budget, released when the reply is sent.
pub struct ReadMessage {
    pub incoming: Incoming,
    pub _budget: Option<OwnedSemaphorePermit>,
}

/// The read side of a connection.
pub struct MessageReader<R> {
    inner: BufReader<R>,
    budget: MessageBudget,
}

impl<R: AsyncRead + Unpin> MessageReader<R> {
    pub fn new(read: R, budget: MessageBudget) -> MessageReader<R> {
        MessageReader {
            inner: BufReader::with_capacity(READ_BUFFER, read),
            budget,
        }
    }

    /// Whether bytes of a next message have arrived already.
    pub fn has_buffered(&self) -> bool {
        !self.inner.buffer().is_empty()
    }

    /// Reads the next message within `limits`.
    pub async fn next(&mut self, limits: ReadLimits) -> Result<ReadMessage, ReadError> {
        let first = match limits.idle {
            Some(idle) => tokio::time::timeout(idle, self.inner.fill_buf())
                .await
                .map_err(|_| ReadError::Idle(idle))?,
            None => self.inner.fill_buf().await,
        };
        if first?.is_empty() {
            return Err(ReadError::Closed);
        }
        let deadline = Instant::now() + limits.message;
        tokio::time::timeout_at(deadline, self.read_message(limits.max_message))
            .await
            .map_err(|_| ReadError::Slow(limits.message))?
    }

    async fn read_message(&mut self, max: usize) -> Result<ReadMessage, ReadError> {
        let mut header = [0u8; HEADER_LEN];
        self.inner.read_exact(&mut header).await?;
        let declared = i32::from_le_bytes([header[0], header[1], header[2], header[3]]);
        let op = i32::from_le_bytes([header[12], header[13], header[14], header[15]]);
        if declared < HEADER_LEN as i32 {
            return Err(ReadError::TooShort(i64::from(declared)));
        }
        let length = declared as usize;
        if length > max {
            return Err(ReadError::TooLarge { length, max });
        }
        let mut frame = Vec::new();
        frame.extend_from_slice(&header);
        // A compressed message also needs room for what it decompresses to: read its
        // declared size before anything is reserved.
        let mut needed = length;
        if op == op_code::OP_COMPRESSED && length >= HEADER_LEN + COMPRESSED_PREFIX {
            let mut prefix = [0u8; COMPRESSED_PREFIX];
            self.inner.read_exact(&mut prefix).await?;
            frame.extend_from_slice(&prefix);
            let uncompressed = i32::from_le_bytes([prefix[4], prefix[5], prefix[6], prefix[7]]);
            let uncompressed = usize::try_from(uncompressed).unwrap_or(0) + HEADER_LEN;
            if uncompressed > max {
                return Err(ReadError::TooLarge {
                    length: uncompressed,
                    max,
                });
            }
            needed += uncompressed;
        }
        let budget = self.reserve(needed).await?;
        frame.reserve_exact(length - frame.len());
        let mut body = (&mut self.inner).take((length - frame.len()) as u64);
        body.read_to_end(&mut frame).await?;
        if frame.len() < length {
            return Err(ReadError::Closed);
        }
        Ok(ReadMessage {
            incoming: decode_frame(&frame, max),
            _budget: budget,
        })
    }

    /// The budget share of a message of `bytes`, waiting for it if others hold the budget.
    async fn reserve(&self, bytes: usize) -> Result<Option<OwnedSemaphorePermit>, ReadError> {
        if bytes <= UNBUDGETED_BYTES {
            return Ok(None);
        }
        let units = bytes.div_ceil(BUDGET_UNIT).min(self.budget.total_units);
        let units = u32::try_from(units).unwrap_or(u32::MAX);
        match self.budget.units.clone().acquire_many_owned(units).await {
            Ok(permit) => Ok(Some(permit)),
            Err(_) => Err(ReadError::Closed),
        }
    }

    /// Resolves once the client closes its end while a command runs (true), or once the
    /// client sends more (false: those bytes stay buffered for the next read).
    pub async fn client_gone(&mut self) -> bool {
        match self.inner.fill_buf().await {
            Ok(bytes) => bytes.is_empty(),
            Err(_) => true,
        }
    }
}
