// The replica-set face through mongosh: rs.status(), rs.conf(), db.hello() and rs.hello()
// answer for the one-member set docgate presents itself as.
// Run: mongosh "mongodb://127.0.0.1:PORT/test?directConnection=true" --quiet --file replset.js
load(require('path').join(__dirname, '_lib.js'));

const status = rs.status();
checkNum(status.ok, 1, 'rs.status().ok');
checkEq(status.set, 'docgate', 'rs.status().set');
checkNum(status.myState, 1, 'rs.status().myState');
checkEq(status.members.length, 1, 'one member');
checkEq(status.members[0].stateStr, 'PRIMARY', 'the member is the primary');
checkEq(status.members[0].self, true, 'the member is this server');

const conf = rs.conf();
checkEq(conf._id, 'docgate', 'rs.conf()._id');
checkEq(conf.members.length, 1, 'rs.conf() has one member');
checkEq(conf.members[0].host, status.members[0].name, 'the configured host is the member');

const hello = db.hello();
checkEq(hello.setName, 'docgate', 'db.hello().setName');
checkEq(hello.isWritablePrimary, true, 'db.hello().isWritablePrimary');
checkEq(hello.secondary, false, 'db.hello().secondary');
checkEq(hello.primary, hello.me, 'this server is the primary');
checkEq(hello.hosts, [hello.me], 'hosts is this server');

const rsHello = rs.hello();
checkEq(rsHello.setName, 'docgate', 'rs.hello().setName');
checkEq(rsHello.isWritablePrimary, true, 'rs.hello().isWritablePrimary');

// replSetInitiate: initiated already.
const err = checkThrows(() => rs.initiate(), 'rs.initiate()');
checkEq(err.code, 23, 'rs.initiate() code');
checkEq(err.codeName, 'AlreadyInitialized', 'rs.initiate() codeName');

// Writes and reads work as on any primary.
const coll = scriptDb('replset_script').items;
coll.insertOne({ _id: 1, x: 'one' });
checkEq(coll.findOne({ _id: 1 }).x, 'one', 'read back');

print('OK');
