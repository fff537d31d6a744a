//! One client connection: reads framed messages, turns each into a command, dispatches it
//! and writes the reply in the shape the request came in — OP_REPLY for a legacy OP_QUERY
//! handshake, OP_MSG otherwise, with a CRC-32C checksum when the request had one, compressed
//! with the request's compressor, and no reply at all for `moreToCome`.
//!
//! Malformed frames whose boundaries are intact get an error reply and the connection goes
//! on; broken framing (bad length, oversized message, I/O error) closes the connection, as
//! do the limits `reader` applies (silence, slow or oversized messages, smaller ones before
//! authentication). A client that goes away while its command runs interrupts the command.
//! The `failCommand` fail point's `closeConnection` closes it without a reply.
//!
//! Not for: command semantics (see `dispatch` and `commands`).

use std::net::SocketAddr;
use std::sync::Arc;

use bson::doc;
use docgate_wire::{
    op_code, Compressor, Incoming, Message, MessageCodec, MsgFlags, Op, OpMsg, OpReply, RawOpMsg,
    WireError,
};
use futures_util::SinkExt;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::watch;
use tokio_util::codec::FramedWrite;

use super::context::ConnectionInfo;
use super::dispatch::{dispatch, CommandReply};
use super::reader::{MessageReader, ReadError, ReadLimits};
use super::request::CommandRequest;
use super::MongoServer;
use crate::auth::service::Access;
use crate::interrupt::{Interrupt, Interruption};
use crate::state::ServerCounters;

/// Serves one connection until the client closes it, framing breaks, a limit is passed,
/// or shutdown. The stream is a TCP socket or a TLS session over one (see `tls`).
pub async fn handle_connection<S>(
    server: Arc<MongoServer>,
    stream: S,
    peer: SocketAddr,
    mut shutdown: watch::Receiver<bool>,
) where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let counters = &server.state.counters;
    ServerCounters::add(&counters.connections_current, 1);
    ServerCounters::add(&counters.connections_total, 1);
    let mut connection = ConnectionInfo::new(server.next_connection_id(), peer);
    tracing::debug!(connection = connection.id, %peer, "connection accepted");
    let (read, write) = tokio::io::split(stream);
    let mut reader = MessageReader::new(read, server.message_budget.clone());
    let mut writer = FramedWrite::new(write, MessageCodec::new());
    // Whether this client may run commands without logging in (authentication off, or the
    // localhost exception); others get the small limits until they authenticate.
    let open_access = matches!(
        server.state.auth.access(peer.ip().is_loopback()).await,
        Ok(Access::Open)
    );

    let mut draining = *shutdown.borrow();
    loop {
        let limits = read_limits(&server, &connection, open_access);
        let read = if draining {
            // Shutting down: a message already partly received is in flight — finish reading
            // and running it; otherwise close.
            if !reader.has_buffered() {
                break;
            }
            match tokio::time::timeout(DRAIN_READ_TIMEOUT, reader.next(limits)).await {
                Ok(read) => read,
                Err(_) => break,
            }
        } else {
            tokio::select! {
                read = reader.next(limits) => read,
                _ = shutdown.changed() => {
                    draining = true;
                    continue;
                }
            }
        };
        let message = match read {
            Ok(message) => message,
            Err(error) => {
                log_closing(&server, &connection, &error, limits);
                super::observe::count_read_limit(&server, &error, limits);
                break;
            }
        };
        let reply = match message.incoming {
            Incoming::Malformed {
                request_id,
                op_code,
                error,
            } => {
                tracing::debug!(connection = connection.id, %error, "malformed message");
                match malformed_reply(request_id, op_code, &error) {
                    Some(reply) => reply,
                    None => break,
                }
            }
            Incoming::Message(message) => {
                let interrupt = Interrupt::default();
                let handling = handle_message(&server, &mut connection, message, &interrupt);
                let reply = watch_client(&mut reader, handling, &interrupt).await;
                if connection.hang_up {
                    // The failCommand fail point's closeConnection: no reply, just EOF.
                    tracing::debug!(
                        connection = connection.id,
                        "closing: failCommand fail point"
                    );
                    break;
                }
                match reply {
                    Some(reply) => reply,
                    None => continue,
                }
            }
        };
        if let Err(error) = writer.send(reply).await {
            tracing::debug!(connection = connection.id, %error, "write failed");
            break;
        }
    }

    // Nobody will commit the transactions this client left open.
    server.sessions.connection_closed(connection.id).await;
    server
        .state
        .counters
        .connections_current
        .fetch_sub(1, std::sync::atomic::Ordering::Relaxed);
    tracing::debug!(connection = connection.id, "connection closed");
}

/// The limits of the next read: small and short until the client has authenticated (when
/// it must), the configured ones after.
fn read_limits(server: &MongoServer, connection: &ConnectionInfo, open_access: bool) -> ReadLimits {
    let limits = &server.limits;
    if open_access || connection.auth.user.is_some() {
        ReadLimits {
            idle: limits.idle_timeout,
            message: limits.message_timeout,
            max_message: limits.max_message_bytes,
        }
    } else {
        ReadLimits {
            idle: Some(
                limits
                    .idle_timeout
                    .map_or(limits.unauthenticated_idle_timeout, |idle| {
                        idle.min(limits.unauthenticated_idle_timeout)
                    }),
            ),
            message: limits.message_timeout,
            max_message: limits.unauthenticated_max_message_bytes,
        }
    }
}

/// Runs `handling` (one command) while watching the connection: if the client closes its
/// end meanwhile, the command's evaluation is interrupted (11601) and its reply dropped.
async fn watch_client<R, F>(
    reader: &mut MessageReader<R>,
    handling: F,
    interrupt: &Interrupt,
) -> Option<Message>
where
    R: AsyncRead + Unpin,
    F: std::future::Future<Output = Option<Message>>,
{
    tokio::pin!(handling);
    tokio::select! {
        reply = &mut handling => return reply,
        gone = reader.client_gone() => {
            if gone {
                interrupt.cancel(Interruption::ClientGone);
            }
        }
    }
    // The client went away (its reply has nowhere to go) or sent its next message early
    // (kept buffered): let the command end either way.
    handling.await
}

fn log_closing(
    server: &MongoServer,
    connection: &ConnectionInfo,
    error: &ReadError,
    limits: ReadLimits,
) {
    match error {
        ReadError::Closed | ReadError::Io(_) => {
            tracing::debug!(connection = connection.id, %error, "connection dropped")
        }
        ReadError::Idle(_) => {
            tracing::debug!(connection = connection.id, peer = %connection.peer, %error, "closing idle connection")
        }
        ReadError::TooLarge { .. } if limits.max_message < server.limits.max_message_bytes => {
            tracing::info!(connection = connection.id, peer = %connection.peer, %error, "closing connection: not authenticated (see --unauthenticated-max-message-bytes)")
        }
        _ => {
            tracing::info!(connection = connection.id, peer = %connection.peer, %error, "closing connection")
        }
    }
}

/// Runs one message and builds its reply (None for `moreToCome` and for replies sent by
/// clients, which the server ignores).
async fn handle_message(
    server: &MongoServer,
    connection: &mut ConnectionInfo,
    message: Message,
    interrupt: &Interrupt,
) -> Option<Message> {
    let compressor = message.compressor;
    match message.op {
        Op::Msg(msg) => {
            let checksum = msg.flags.checksum_present();
            let more_to_come = msg.flags.more_to_come();
            let reply = match CommandRequest::from_op_msg(msg) {
                Ok(request) => dispatch(server, connection, request, interrupt).await,
                Err(error) => error.to_reply().into(),
            };
            if more_to_come {
                return None;
            }
            Some(msg_reply(
                message.request_id,
                reply,
                checksum,
                reply_compressor(connection, compressor),
            ))
        }
        Op::Query(query) => {
            let reply = match CommandRequest::from_op_query(query) {
                Ok(request) => dispatch(server, connection, request, interrupt)
                    .await
                    .into_document(),
                Err(error) => error.to_reply(),
            };
            Some(Message {
                request_id: 0,
                response_to: message.request_id,
                op: Op::Reply(OpReply::single(reply)),
                compressor: reply_compressor(connection, compressor),
            })
        }
        // Replies sent by a client, and the encoded form only servers send.
        Op::Reply(_) | Op::RawMsg(_) => None,
    }
}

/// Replies are compressed with the request's compressor, if the handshake negotiated it.
fn reply_compressor(
    connection: &ConnectionInfo,
    request: Option<Compressor>,
) -> Option<Compressor> {
    request.filter(|c| connection.compressors.contains(c))
}

fn msg_reply(
    response_to: i32,
    body: impl Into<CommandReply>,
    checksum: bool,
    compressor: Option<Compressor>,
) -> Message {
    let flags = if checksum {
        MsgFlags(MsgFlags::CHECKSUM_PRESENT)
    } else {
        MsgFlags::default()
    };
    let op = match body.into() {
        CommandReply::Document(body) => Op::Msg(OpMsg {
            flags,
            body,
            sequences: Vec::new(),
        }),
        CommandReply::Encoded(body) => Op::RawMsg(RawOpMsg { flags, body }),
    };
    Message {
        request_id: 0,
        response_to,
        op,
        compressor,
    }
}

/// The error reply for a frame whose content was bad, or None to close the connection.
fn malformed_reply(request_id: i32, op_code: i32, error: &WireError) -> Option<Message> {
    let (code, code_name) = match error {
        WireError::ChecksumMismatch => (CHECKSUM_MISMATCH, "ChecksumMismatch"),
        WireError::NestingTooDeep(_) => (15, "Overflow"),
        _ => (INVALID_BSON, "InvalidBSON"),
    };
    let reply = doc! {"ok": 0.0, "errmsg": error.to_string(), "code": code, "codeName": code_name};
    match op_code {
        op_code::OP_MSG => Some(msg_reply(request_id, reply, false, None)),
        op_code::OP_QUERY => {
            let mut legacy = reply;
            legacy.insert("$err", error.to_string());
            Some(Message {
                request_id: 0,
                response_to: request_id,
                op: Op::Reply(OpReply::single(legacy)),
                compressor: None,
            })
        }
        _ => None,
    }
}

/// How long a shutting-down connection waits for the rest of a partly received message.
const DRAIN_READ_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

/// MongoDB's code for a BSON document that fails validation.
const INVALID_BSON: i32 = 22;
/// MongoDB's code for an OP_MSG whose CRC-32C does not match.
const CHECKSUM_MISMATCH: i32 = 40419;
