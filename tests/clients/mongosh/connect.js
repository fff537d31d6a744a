// Connecting with mongosh: ping, hello, buildInfo, server version, unknown commands.
// Run: mongosh "mongodb://127.0.0.1:PORT/test?directConnection=true" --quiet --file connect.js
load(require('path').join(__dirname, '_lib.js'));

const ping = db.adminCommand({ ping: 1 });
checkNum(ping.ok, 1, 'ping ok');

checkEq(db.getName(), 'test', 'database from the connection string');

const hello = db.hello();
checkEq(hello.isWritablePrimary, true, 'hello.isWritablePrimary');
checkNum(hello.maxWireVersion, 21, 'hello.maxWireVersion');
checkNum(hello.maxBsonObjectSize, 16 * 1024 * 1024, 'hello.maxBsonObjectSize');

const legacy = db.isMaster();
checkEq(legacy.ismaster, true, 'isMaster.ismaster');

const version = db.version();
check(typeof version === 'string' && version.length > 0, 'db.version() is a string: ' + version);

const buildInfo = db.adminCommand({ buildInfo: 1 });
checkNum(buildInfo.ok, 1, 'buildInfo ok');
checkEq(buildInfo.version, version, 'buildInfo.version');

const err = checkThrows(() => db.runCommand({ noSuchCommandAtAll: 1 }), 'unknown command');
checkEq(err.code, 59, 'unknown command code');
checkEq(err.codeName, 'CommandNotFound', 'unknown command codeName');

// The connection is still usable after an error.
checkNum(db.adminCommand({ ping: 1 }).ok, 1, 'ping after an error');

print('OK');
