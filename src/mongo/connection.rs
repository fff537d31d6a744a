//! One client connection: reads framed messages, turns each into a command, dispatches it
//! and writes the reply in the shape the request came in — OP_REPLY for a legacy OP_QUERY
//! handshake, OP_MSG otherwise, with a CRC-32C checksum when the request had one, compressed
//! with the request's compressor, and no reply at all for `moreToCome`.
//!
//! Malformed frames whose boundaries are intact get an error reply and the connection goes
//! on; broken framing (bad length, oversized message, I/O error) closes the connection.
//!
//! Not for: command semantics (see `dispatch` and `commands`).

use std::net::SocketAddr;
use std::sync::Arc;

use bson::doc;
use docgate_wire::{
    op_code, Compressor, Incoming, Message, MessageCodec, MsgFlags, Op, OpMsg, OpReply, RawOpMsg,
    WireError,
};
use futures_util::{SinkExt, StreamExt};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::watch;
use tokio_util::codec::Framed;

use super::dispatch::{dispatch, CommandReply, ConnectionInfo};
use super::request::CommandRequest;
use super::MongoServer;
use crate::state::ServerCounters;

/// Serves one connection until the client closes it, framing breaks, or shutdown. The
/// stream is a TCP socket or a TLS session over one (see `tls`).
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
    let mut framed = Framed::new(stream, MessageCodec::new());

    let mut draining = *shutdown.borrow();
    loop {
        let incoming = if draining {
            // Shutting down: a message already partly received is in flight — finish reading
            // and running it; otherwise close.
            if framed.read_buffer().is_empty() {
                break;
            }
            match tokio::time::timeout(DRAIN_READ_TIMEOUT, framed.next()).await {
                Ok(incoming) => incoming,
                Err(_) => break,
            }
        } else {
            tokio::select! {
                incoming = framed.next() => incoming,
                _ = shutdown.changed() => {
                    draining = true;
                    continue;
                }
            }
        };
        let reply = match incoming {
            None => break,
            Some(Err(error)) => {
                log_fatal(&connection, &error);
                break;
            }
            Some(Ok(Incoming::Malformed {
                request_id,
                op_code,
                error,
            })) => {
                tracing::debug!(connection = connection.id, %error, "malformed message");
                match malformed_reply(request_id, op_code, &error) {
                    Some(reply) => reply,
                    None => break,
                }
            }
            Some(Ok(Incoming::Message(message))) => {
                match handle_message(&server, &mut connection, message).await {
                    Some(reply) => reply,
                    None => continue,
                }
            }
        };
        if let Err(error) = framed.send(reply).await {
            tracing::debug!(connection = connection.id, %error, "write failed");
            break;
        }
    }

    server
        .state
        .counters
        .connections_current
        .fetch_sub(1, std::sync::atomic::Ordering::Relaxed);
    tracing::debug!(connection = connection.id, "connection closed");
}

fn log_fatal(connection: &ConnectionInfo, error: &WireError) {
    match error {
        WireError::Io(_) => {
            tracing::debug!(connection = connection.id, %error, "connection dropped")
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
) -> Option<Message> {
    let compressor = message.compressor;
    match message.op {
        Op::Msg(msg) => {
            let checksum = msg.flags.checksum_present();
            let more_to_come = msg.flags.more_to_come();
            let reply = match CommandRequest::from_op_msg(msg) {
                Ok(request) => dispatch(server, connection, request).await,
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
                Ok(request) => dispatch(server, connection, request).await.into_document(),
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
