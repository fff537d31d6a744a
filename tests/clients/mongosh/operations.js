// The admin commands people type first, with mongosh's own helpers: db.currentOp(),
// db.killOp(), db.setProfilingLevel(), db.getProfilingStatus(), db.system.profile.find(),
// db.fsyncLock()/db.fsyncUnlock() (refused: docgate cannot hold every write), and getLog.
// Run: mongosh "mongodb://127.0.0.1:PORT/test?directConnection=true" --quiet --file operations.js
load(require('path').join(__dirname, '_lib.js'));

const d = scriptDb('mongosh_operations');
d.items.insertMany([{ _id: 1, x: 1 }, { _id: 2, x: 2 }]);

// db.currentOp() (a $currentOp aggregation) lists itself, with its namespace and command.
const ops = db.currentOp();
checkNum(ops.ok, 1, 'currentOp ok');
const self = ops.inprog.filter((op) => op.command && op.command.pipeline
  && op.command.pipeline[0].$currentOp !== undefined);
checkEq(self.length, 1, 'currentOp lists itself: ' + show(ops));
checkEq(self[0].ns, 'admin.$cmd.aggregate', 'its namespace');
check(self[0].active === true, 'active');
checkEq(db.adminCommand({ currentOp: 1, 'command.currentOp': 1 }).inprog.length, 1,
  'the currentOp command lists itself too');
const filtered = db.currentOp({ ns: 'nowhere.at_all' });
checkEq(filtered.inprog.length, 0, 'a filter on the entries');

// killOp of an operation that has ended answers as MongoDB does.
const killed = db.killOp(self[0].opid);
checkNum(killed.ok, 1, 'killOp ok');
checkEq(killed.info, 'attempting to kill op', 'killOp info');

// The profiler: level 2 records every operation, read back with find.
const before = d.getProfilingStatus();
checkNum(before.was, 0, 'profiling off at start');
checkNum(before.slowms, 100, 'slowms default');
const was = d.setProfilingLevel(2);
checkNum(was.was, 0, 'setProfilingLevel answers the level before');
d.items.find({ x: 2 }).toArray();
const entries = d.system.profile.find({ op: 'query', ns: 'mongosh_operations.items' }).toArray();
checkEq(entries.length, 1, 'one query profiled');
checkEq(entries[0].command.filter, { x: 2 }, 'its filter');
check(typeof entries[0].millis === 'number', 'millis: ' + show(entries[0]));
check(typeof entries[0].docgate.sql === 'string', 'its SQL: ' + show(entries[0]));
checkNum(d.getProfilingStatus().was, 2, 'level 2 now');
d.setProfilingLevel(1, { slowms: 50 });
const status = d.getProfilingStatus();
checkNum(status.was, 1, 'level 1');
checkNum(status.slowms, 50, 'slowms 50');
d.setProfilingLevel(0, { slowms: 100 });
checkThrows(() => d.runCommand({ profile: 1, sampleRate: 2 }), 'sampleRate above 1 is refused');

// fsync flushes; fsyncLock is refused clearly, fsyncUnlock has nothing to unlock.
checkNum(db.adminCommand({ fsync: 1 }).ok, 1, 'fsync');
let lockError = null;
try {
  const reply = db.fsyncLock();
  if (reply.ok === 0) lockError = reply;
} catch (err) {
  lockError = err;
}
check(lockError !== null, 'fsyncLock is refused');
checkNum(lockError.code, 115, 'fsyncLock: CommandNotSupported');
let unlockError = null;
try {
  const reply = db.fsyncUnlock();
  if (reply.ok === 0) unlockError = reply;
} catch (err) {
  unlockError = err;
}
check(unlockError !== null, 'fsyncUnlock is refused');
checkNum(unlockError.code, 20, 'fsyncUnlock: IllegalOperation');

// getLog: the server's recent lines in MongoDB's structured form.
const log = db.adminCommand({ getLog: 'global' });
checkNum(log.ok, 1, 'getLog ok');
check(log.log.length > 0, 'getLog has lines');
const line = JSON.parse(log.log[log.log.length - 1]);
check(line.t && line.s && line.c && line.msg !== undefined, 'a structured line: ' + log.log[0]);
checkEq(db.adminCommand({ getLog: '*' }).names, ['global', 'startupWarnings'], 'getLog *');

print('OK');
