//! REST modules: handlers defined as metadata, ORDS-style. A module (base path, templates,
//! handlers, privileges) is one JSON document stored as a metadata record (`definition`),
//! managed through admin endpoints and `docgate rest apply` (`admin`), and served by the
//! router's fallback (`dispatch`), which binds request values into the handler's MongoDB
//! spec (`binds`, at the sites `bind_sites` allows) and runs it on the shared core (`sources`).
//!
//! Not for: the document API (`soda`) or credentials (`security`, `tokens`).

pub mod admin;
pub mod bind_sites;
pub mod binds;
pub mod definition;
pub mod dispatch;
pub mod sources;
