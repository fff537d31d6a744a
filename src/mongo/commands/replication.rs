//! The replica-set face beyond `hello`: the replication commands of a one-member set —
//! `replSetGetStatus` (mongosh `rs.status()`), `replSetGetConfig` (`rs.conf()`),
//! `replSetInitiate` (23 AlreadyInitialized: the set is initiated at start) and
//! `replSetReconfig` (103: the one member is this server, fixed by `--replica-set` and
//! `--advertise`) — and the cluster time every reply carries: a client's `$clusterTime`
//! moves the server's clock forward before the command runs ([`receive_cluster_time`]); each
//! reply, error replies included, gets `$clusterTime` and `operationTime`
//! ([`stamp_reply`]). With `--topology standalone` the commands answer what a standalone
//! mongod answers (76 NoReplicationEnabled) and replies carry no cluster time.
//!
//! The cluster time's signature is MongoDB's placeholder (a zero hash, key id 0) and the
//! signature of a client's `$clusterTime` is not validated (see `ops::cluster_time`).
//!
//! Not for: the clock itself (`ops::cluster_time`), or `hello`'s fields (`handshake`).

use bson::raw::cstr;
use bson::spec::BinarySubtype;
use bson::{doc, Binary, Bson, DateTime, Document, RawBson, RawDocumentBuf, Timestamp};

use super::handshake::{election_id, op_time, wall_time, TERM};
use crate::mongo::context::CommandContext;
use crate::mongo::dispatch::CommandReply;
use crate::mongo::error::{CommandResult, OpError};
use crate::mongo::request::CommandRequest;
use crate::mongo::MongoServer;

/// What a standalone server answers to a replication command.
const NOT_A_REPLICA_SET: &str = "not running with --replSet";

/// Moves the cluster time forward to the client's `$clusterTime.clusterTime`, if later.
/// The signature is not checked. A time more than a year ahead of the wall clock refuses
/// the command (209 ClusterTimeFailsRateLimiter), as MongoDB's drift limit does.
pub fn receive_cluster_time(server: &MongoServer, request: &CommandRequest) -> Result<(), OpError> {
    if !server.is_replica_set() {
        return Ok(());
    }
    if let Some(Bson::Document(gossip)) = request.body.get("$clusterTime") {
        if let Ok(time) = gossip.get_timestamp("clusterTime") {
            let clock = &server.state.cluster_time;
            if !clock.within_drift(time) {
                return Err(OpError::ClusterTimeFailsRateLimiter(format!(
                    "New cluster time, {}, is too far from this node's wall clock time, {}.",
                    time.time,
                    clock.now().time
                )));
            }
            clock.advance_to(time);
        }
    }
    Ok(())
}

/// `$clusterTime`: the time, signed with MongoDB's placeholder signature.
fn cluster_time_document(time: Timestamp) -> Document {
    doc! {
        "clusterTime": time,
        "signature": {
            "hash": Binary { subtype: BinarySubtype::Generic, bytes: vec![0; 20] },
            "keyId": 0_i64,
        },
    }
}

/// Adds `$clusterTime` and `operationTime` (the clock's current time, after the command) to
/// a reply, success or error, on the replica-set face.
pub fn stamp_reply(server: &MongoServer, reply: CommandReply) -> CommandReply {
    if !server.is_replica_set() {
        return reply;
    }
    let now = server.state.cluster_time.now();
    match reply {
        CommandReply::Document(mut document) => {
            document.insert("$clusterTime", cluster_time_document(now));
            document.insert("operationTime", now);
            CommandReply::Document(document)
        }
        CommandReply::Encoded(mut bytes) => {
            match RawDocumentBuf::try_from(&cluster_time_document(now)) {
                Ok(gossip) => {
                    bytes.append(cstr!("$clusterTime"), gossip);
                    bytes.append(cstr!("operationTime"), RawBson::Timestamp(now));
                }
                Err(error) => {
                    tracing::warn!(%error, "cannot encode $clusterTime");
                }
            }
            CommandReply::Encoded(bytes)
        }
    }
}

/// The one member as `replSetGetStatus` lists it.
fn status_member(context: &CommandContext<'_>, now: Timestamp) -> Document {
    let server = context.server;
    let state = &server.state;
    let started = DateTime::from_system_time(state.started_at);
    doc! {
        "_id": 0,
        "name": server.advertise.clone(),
        "health": 1.0,
        "state": 1,
        "stateStr": "PRIMARY",
        "uptime": state.started.elapsed().as_secs() as i64,
        "optime": op_time(now),
        "optimeDate": wall_time(now),
        "lastAppliedWallTime": wall_time(now),
        "lastDurableWallTime": wall_time(now),
        "syncSourceHost": "",
        "syncSourceId": -1,
        "infoMessage": "",
        "electionTime": Timestamp { time: (started.timestamp_millis() / 1000) as u32, increment: 1 },
        "electionDate": started,
        "configVersion": 1,
        "configTerm": TERM,
        "self": true,
        "lastHeartbeatMessage": "",
    }
}

/// Refuses a replication command on the standalone face.
fn require_replica_set(context: &CommandContext<'_>, message: &str) -> Result<(), OpError> {
    if context.server.is_replica_set() {
        Ok(())
    } else {
        Err(OpError::NoReplicationEnabled(message.into()))
    }
}

/// Replication commands run against `admin` only, as in MongoDB.
fn require_admin(request: &CommandRequest) -> Result<(), OpError> {
    if request.db == "admin" {
        Ok(())
    } else {
        Err(OpError::Unauthorized(format!(
            "{} may only be run against the admin database.",
            request.name
        )))
    }
}

/// `replSetGetStatus`: the one-member set, its member the primary.
pub fn repl_set_get_status(
    context: &CommandContext<'_>,
    request: &CommandRequest,
) -> CommandResult {
    let mut arguments = request.arguments();
    // MongoDB's option to add initial-sync progress: a primary that never synced has none.
    arguments.without_effect("initialSync");
    arguments.finish()?;
    require_admin(request)?;
    require_replica_set(context, NOT_A_REPLICA_SET)?;
    let server = context.server;
    let now = server.state.cluster_time.now();
    let optime = op_time(now);
    let wall = wall_time(now);
    Ok(doc! {
        "set": server.face.replica_set.clone(),
        "date": DateTime::now(),
        "myState": 1,
        "term": TERM,
        "syncSourceHost": "",
        "syncSourceId": -1,
        "heartbeatIntervalMillis": 2000_i64,
        "majorityVoteCount": 1,
        "writeMajorityCount": 1,
        "votingMembersCount": 1,
        "writableVotingMembersCount": 1,
        "optimes": {
            "lastCommittedOpTime": optime.clone(),
            "lastCommittedWallTime": wall,
            "readConcernMajorityOpTime": optime.clone(),
            "appliedOpTime": optime.clone(),
            "durableOpTime": optime,
            "lastAppliedWallTime": wall,
            "lastDurableWallTime": wall,
        },
        "electionCandidateMetrics": {
            "lastElectionReason": "electionTimeout",
            "lastElectionDate": DateTime::from_system_time(server.state.started_at),
            "electionTerm": TERM,
            "numVotesNeeded": 1,
            "priorityAtElection": 1.0,
            "electionTimeoutMillis": 10000_i64,
        },
        "members": [status_member(context, now)],
    })
}

/// `replSetGetConfig`: the configuration of the one-member set.
pub fn repl_set_get_config(
    context: &CommandContext<'_>,
    request: &CommandRequest,
) -> CommandResult {
    let mut arguments = request.arguments();
    // MongoDB's options to add commitment status and the new-config fields: one member
    // commits every configuration at once, and there is only the one.
    arguments.without_effect("commitmentStatus");
    arguments.without_effect("includeNewlyAdded");
    arguments.finish()?;
    require_admin(request)?;
    require_replica_set(context, NOT_A_REPLICA_SET)?;
    let server = context.server;
    Ok(doc! {
        "config": {
            "_id": server.face.replica_set.clone(),
            "version": 1,
            "term": TERM,
            "members": [{
                "_id": 0,
                "host": server.advertise.clone(),
                "arbiterOnly": false,
                "buildIndexes": true,
                "hidden": false,
                "priority": 1.0,
                "tags": {},
                "secondaryDelaySecs": 0_i64,
                "votes": 1,
            }],
            "protocolVersion": 1_i64,
            "writeConcernMajorityJournalDefault": true,
            "settings": {
                "chainingAllowed": true,
                "heartbeatIntervalMillis": 2000,
                "heartbeatTimeoutSecs": 10,
                "electionTimeoutMillis": 10000,
                "catchUpTimeoutMillis": -1,
                "catchUpTakeoverDelayMillis": 30000,
                "getLastErrorModes": {},
                "getLastErrorDefaults": {"w": 1, "wtimeout": 0},
                "replicaSetId": election_id(),
            },
        },
    })
}

/// `replSetInitiate`: the set is initiated when docgate starts.
pub fn repl_set_initiate(context: &CommandContext<'_>, request: &CommandRequest) -> CommandResult {
    require_admin(request)?;
    require_replica_set(
        context,
        "This node was not started with replication enabled.",
    )?;
    Err(OpError::AlreadyInitialized("already initialized".into()))
}

/// `replSetReconfig`: the one member is this server; its configuration is fixed by
/// `--replica-set` and `--advertise`.
pub fn repl_set_reconfig(context: &CommandContext<'_>, request: &CommandRequest) -> CommandResult {
    require_admin(request)?;
    require_replica_set(context, NOT_A_REPLICA_SET)?;
    Err(OpError::NewReplicaSetConfigurationIncompatible(format!(
        "docgate's replica set {} has one member, this server; its configuration cannot be \
         changed (start docgate with --replica-set and --advertise instead)",
        context.server.face.replica_set
    )))
}
