//! Raw-command helpers shared by the session and transaction tests (`transactions.rs`,
//! `session_lifecycle.rs`): one OP_MSG command and its reply, session ids, reply checks,
//! `serverStatus` sections.
#![allow(dead_code)] // each test file uses a subset

use std::net::TcpStream;
use std::sync::atomic::{AtomicI32, Ordering};

use mongodb::bson::{doc, Document, Uuid};

use crate::driver_support::num;
use crate::raw_wire;

static REQUEST_ID: AtomicI32 = AtomicI32::new(1000);

/// One raw OP_MSG command (its body carries `$db`) and its reply body.
pub fn raw(stream: &mut TcpStream, cmd: Document) -> Document {
    raw_wire::command(stream, REQUEST_ID.fetch_add(1, Ordering::SeqCst), &cmd).body
}

/// A logical session id as drivers make it: `{id: UUID}`.
pub fn new_lsid() -> Document {
    doc! {"id": Uuid::new()}
}

pub fn assert_raw_ok(what: &str, reply: &Document) {
    assert_eq!(raw_wire::ok_of(reply), 1.0, "{what}: {reply}");
}

pub fn assert_raw_error(what: &str, reply: &Document, code: i32, code_name: &str) {
    raw_wire::assert_error_reply(reply, what);
    assert_eq!(num(reply, "code"), f64::from(code), "{what}: {reply}");
    assert_eq!(
        reply.get_str("codeName").unwrap_or(""),
        code_name,
        "{what}: {reply}"
    );
}

pub fn labels(reply: &Document) -> Vec<String> {
    reply
        .get_array("errorLabels")
        .map(|a| {
            a.iter()
                .filter_map(|l| l.as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

pub fn server_status(stream: &mut TcpStream) -> Document {
    let reply = raw(stream, doc! {"serverStatus": 1, "$db": "admin"});
    assert_raw_ok("serverStatus", &reply);
    reply
}

pub fn sub<'a>(status: &'a Document, path: &[&str]) -> &'a Document {
    let mut d = status;
    for key in path {
        d = d.get_document(key).unwrap_or_else(|_| {
            panic!("serverStatus has no {} document: {status}", path.join("."))
        });
    }
    d
}

pub fn current_open(status: &Document) -> f64 {
    num(sub(status, &["transactions"]), "currentOpen")
}
