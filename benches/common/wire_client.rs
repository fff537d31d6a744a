//! A thin MongoDB wire client for benchmarks: one TCP connection, requests encoded with
//! docgate's own codec, replies read as BSON bytes (never decoded into documents), a PLAIN
//! sign-in, one command at a time. It is to the MongoDB side what `tokio-postgres` is to the
//! SQL side: a client that adds almost nothing of its own, so a latency measured with it is
//! docgate's round trip rather than a driver's work (server selection, pool checkout,
//! sessions, option handling, decoding every document).
//!
//! Not for: tests (they drive docgate with real drivers), or anything but well-behaved
//! request/reply exchanges: a transport error or an unexpected reply panics.

use bson::{doc, spec::BinarySubtype, Binary, Document, RawDocument};
use docgate_wire::{encode_message, op_code, Message, MsgFlags, Op, OpMsg, MAX_MESSAGE_SIZE_BYTES};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// Bytes before an `OP_MSG` reply's body: the header, `flagBits` and the section kind.
const BODY_OFFSET: usize = 16 + 4 + 1;

/// One connection to a docgate server.
pub struct WireClient {
    stream: TcpStream,
    next_request_id: i32,
    frame: Vec<u8>,
}

impl WireClient {
    /// Connects to `127.0.0.1:port` with `TCP_NODELAY`, as drivers do.
    pub async fn connect(port: u16) -> WireClient {
        let stream = TcpStream::connect(("127.0.0.1", port))
            .await
            .expect("connect to docgate");
        stream.set_nodelay(true).expect("TCP_NODELAY");
        WireClient {
            stream,
            next_request_id: 1,
            frame: Vec::new(),
        }
    }

    /// Connects and signs in as `user` with PLAIN on `$external` (docgate's `admin` users),
    /// a single `saslStart` round trip.
    pub async fn connect_as(port: u16, user: &str, password: &str) -> WireClient {
        let mut client = WireClient::connect(port).await;
        let payload = format!("\0{user}\0{password}").into_bytes();
        let reply = client
            .command(doc! {
                "saslStart": 1,
                "mechanism": "PLAIN",
                "payload": Binary { subtype: BinarySubtype::Generic, bytes: payload },
                "$db": "$external",
            })
            .await;
        assert_eq!(
            reply.get_bool("done").ok(),
            Some(true),
            "PLAIN sign-in as {user} failed"
        );
        client
    }

    /// Sends one command (`body` carries `$db`) and returns the reply as it came, without
    /// decoding it; panics when the reply is not `ok: 1`.
    pub async fn command(&mut self, body: Document) -> &RawDocument {
        let reply = self.reply(body).await;
        assert!(ok(reply), "command failed: {:?}", Document::try_from(reply));
        reply
    }

    /// Sends one command (`body` carries `$db`) and returns the reply as it came, `ok: 0`
    /// (an error reply) included.
    pub async fn reply(&mut self, body: Document) -> &RawDocument {
        let request_id = self.next_request_id;
        self.next_request_id = self.next_request_id.wrapping_add(1);
        let request = OpMsg {
            flags: MsgFlags::default(),
            body,
            sequences: Vec::new(),
        };
        let bytes = encode_message(
            &Message::new(request_id, 0, Op::Msg(request)),
            MAX_MESSAGE_SIZE_BYTES,
        )
        .expect("encode a command");
        self.stream.write_all(&bytes).await.expect("send a command");

        let mut length = [0u8; 4];
        self.stream
            .read_exact(&mut length)
            .await
            .expect("reply length");
        let length = i32::from_le_bytes(length) as usize;
        assert!(length > BODY_OFFSET, "reply of {length} bytes");
        self.frame.resize(length, 0);
        self.frame[..4].copy_from_slice(&(length as i32).to_le_bytes());
        self.stream
            .read_exact(&mut self.frame[4..])
            .await
            .expect("reply");
        let opcode = i32::from_le_bytes(self.frame[12..16].try_into().expect("header"));
        assert_eq!(opcode, op_code::OP_MSG, "reply is not an OP_MSG");
        RawDocument::from_bytes(&self.frame[BODY_OFFSET..]).expect("reply body")
    }
}

/// Whether a reply says `ok: 1`.
pub fn ok(reply: &RawDocument) -> bool {
    match reply.get("ok") {
        Ok(Some(value)) => value.as_f64() == Some(1.0) || value.as_i32() == Some(1),
        _ => false,
    }
}

/// The documents of a `find` reply's first batch, as bytes.
pub fn first_batch(reply: &RawDocument) -> Vec<&RawDocument> {
    let batch = reply
        .get_document("cursor")
        .and_then(|cursor| cursor.get_array("firstBatch"))
        .expect("cursor.firstBatch");
    batch
        .into_iter()
        .map(|item| {
            item.expect("batch element")
                .as_document()
                .expect("a document")
        })
        .collect()
}
