//! The mongo front end's mapping of the core's [`OpError`] to MongoDB's error reply
//! (`{ok: 0, errmsg, code, codeName, errorLabels}`), and the result types of its handlers.
//! Every failure a client can see passes through here.
//!
//! Not for: write errors of individual statements inside a successful command (those are
//! `writeErrors` entries, built by the write commands from the same codes).

use bson::{doc, Document};

pub use crate::ops::OpError;

impl OpError {
    /// The `{ok: 0, errmsg, code, codeName}` reply.
    pub fn to_reply(&self) -> Document {
        let mut reply = doc! {
            "ok": 0.0,
            "errmsg": self.client_message(),
            "code": self.code(),
            "codeName": self.code_name(),
        };
        if let OpError::DocumentValidationFailure(info) = self {
            reply.insert("errInfo", info.as_ref().clone());
        }
        if let OpError::DuplicateKey(entry) = self {
            for field in ["keyPattern", "keyValue"] {
                if let Some(value) = entry.get(field) {
                    reply.insert(field, value.clone());
                }
            }
        }
        let labels = self.labels();
        if !labels.is_empty() {
            reply.insert(
                "errorLabels",
                labels.iter().map(|l| l.to_string()).collect::<Vec<_>>(),
            );
        }
        reply
    }
}

/// Result of a command handler.
pub type CommandResult = Result<Document, OpError>;

/// Result of a handler whose reply may be encoded already (the cursor commands).
pub type ReplyResult = Result<crate::mongo::dispatch::CommandReply, OpError>;
