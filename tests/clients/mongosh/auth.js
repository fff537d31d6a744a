// Authentication and users with mongosh: logging in, db.createUser, db.getUsers,
// db.auth with a wrong password, a read-only user's insert refused with code 13.
//
// Runs two ways, both against a fresh server:
//  - logged in (tests/run_all.sh, suite_auth_clients): the server already has a root user
//    in admin and mongosh was started with
//      mongosh "mongodb://127.0.0.1:PORT/test?directConnection=true" \
//        --username USER --password PWD --authenticationDatabase admin --quiet --file auth.js
//    (SCRAM-SHA-256, mongosh's default for a user that has both SCRAM mechanisms);
//  - not logged in, on a server without users (the generic loop over the scripts in
//    suite_mongosh): the script creates the first user over the localhost exception and
//    logs in with db.auth().
// Then both go through the same checks. Prints OK last.
load(require('path').join(__dirname, '_lib.js'));

const admin = db.getSiblingDB('admin');
const test = db.getSiblingDB('test');

function checkCode(err, code, codeName, message) {
  checkEq(err.code, code, message + ': code (' + err.message + ')');
  checkEq(err.codeName, codeName, message + ': codeName');
}

function statusOf(someDb) {
  return someDb.getSiblingDB('admin').runCommand({ connectionStatus: 1 }).authInfo;
}

const initial = statusOf(db);
if (initial.authenticatedUsers.length === 0) {
  // ---- not logged in: the localhost exception
  checkEq(admin.getUsers().users, [], 'a fresh server has no users');
  admin.createUser({ user: 'shroot', pwd: 'shroot-pwd', roles: ['root'] });
  const err = checkThrows(() => test.x.insertOne({ _id: 0 }), 'insert without login once a user exists');
  checkCode(err, 13, 'Unauthorized', 'insert without login');
  check(/^Command insert requires authentication$/.test(err.message), 'message: ' + err.message);
  checkNum(admin.auth('shroot', 'shroot-pwd').ok, 1, 'db.auth as the first user');
  checkEq(statusOf(db).authenticatedUsers, [{ user: 'shroot', db: 'admin' }], 'logged in after db.auth');
} else {
  // ---- logged in with --username/--password/--authenticationDatabase admin
  checkEq(initial.authenticatedUsers.length, 1, 'one authenticated user');
  checkEq(initial.authenticatedUsers[0].db, 'admin', 'authenticated against admin');
  check(initial.authenticatedUserRoles.some((r) => r.role === 'root' && r.db === 'admin'),
    'the shell user has root: ' + show(initial.authenticatedUserRoles));
  const mechs = admin.runCommand({ serverStatus: 1 }).security.authentication.mechanisms;
  const sha256 = mechs['SCRAM-SHA-256'];
  check(sha256.authenticate.successful + sha256.speculativeAuthenticate.successful >= 1,
    'the shell logged in with SCRAM-SHA-256: ' + show(mechs));
}
const me = statusOf(db).authenticatedUsers[0].user;

// ---- CRUD as the logged-in user
test.x.insertOne({ _id: 1, who: 'shell' });
checkEq(test.x.findOne({ _id: 1 }), { _id: 1, who: 'shell' }, 'insertOne then findOne');

// ---- db.createUser and db.getUsers
admin.createUser({ user: 'shreader', pwd: 'shreader-pwd', roles: [{ role: 'read', db: 'test' }] });
admin.createUser({ user: 'shwriter', pwd: 'shwriter-pwd', roles: ['readWriteAnyDatabase'], customData: { n: 1 } });
const users = admin.getUsers().users; // mongosh returns the usersInfo reply
const byName = {};
for (const u of users) byName[u.user] = u;
checkEq(Object.keys(byName).sort(), [me, 'shreader', 'shwriter'].sort(), 'db.getUsers() names');
const reader = byName.shreader;
checkEq(reader._id, 'admin.shreader', 'usersInfo _id');
checkEq(reader.db, 'admin', 'usersInfo db');
checkEq(reader.roles, [{ role: 'read', db: 'test' }], 'usersInfo roles');
checkEq(reader.mechanisms.slice().sort(), ['SCRAM-SHA-1', 'SCRAM-SHA-256'], 'usersInfo mechanisms');
check(!('credentials' in reader), 'no credentials without showCredentials');
check(!show(users).includes('shreader-pwd'), 'the password is not echoed');
checkEq(byName.shwriter.customData, { n: 1 }, 'customData');
checkEq(admin.getUser('shwriter').roles, [{ role: 'readWriteAnyDatabase', db: 'admin' }], 'db.getUser');

const dup = checkThrows(() => admin.createUser({ user: 'shreader', pwd: 'x', roles: [] }), 'duplicate createUser');
checkEq(dup.code, 51003, 'duplicate user code (' + dup.message + ')');
const noRole = checkThrows(
  () => admin.createUser({ user: 'shnobody', pwd: 'x', roles: ['noSuchRole'] }), 'createUser with an unknown role');
checkCode(noRole, 31, 'RoleNotFound', 'unknown role');

// ---- db.auth: a wrong password throws (18) and leaves this connection as it was
const other = new Mongo(db.getMongo().getURI());
const bad = checkThrows(() => other.getDB('admin').auth('shreader', 'wrong-pwd'), 'db.auth with a wrong password');
checkCode(bad, 18, 'AuthenticationFailed', 'wrong password');
checkEq(bad.message, 'Authentication failed.', 'wrong password message');
const unknown = checkThrows(() => other.getDB('admin').auth('shghost', 'wrong-pwd'), 'db.auth as an unknown user');
checkCode(unknown, 18, 'AuthenticationFailed', 'unknown user');
checkEq(statusOf(db).authenticatedUsers[0].user, me, 'the shell is still logged in as before');

// ---- a read-only user: find works, insert is refused with 13
checkNum(other.getDB('admin').auth('shreader', 'shreader-pwd').ok, 1, 'db.auth as the read-only user');
checkEq(statusOf(other.getDB('test')).authenticatedUsers, [{ user: 'shreader', db: 'admin' }], 'reader logged in');
checkEq(other.getDB('test').x.findOne({ _id: 1 }), { _id: 1, who: 'shell' }, 'reader can find');
const denied = checkThrows(() => other.getDB('test').x.insertOne({ _id: 2 }), 'reader insertOne');
checkCode(denied, 13, 'Unauthorized', 'reader insertOne');
check(/^not authorized on test to execute command \{ ?insert/.test(denied.message), 'message: ' + denied.message);
const deniedUsers = checkThrows(() => other.getDB('admin').getUsers(), 'reader db.getUsers()');
checkCode(deniedUsers, 13, 'Unauthorized', 'reader usersInfo');

// ---- a user with readWriteAnyDatabase, and the effect of db.dropUser on its connection
const writer = new Mongo(db.getMongo().getURI());
checkNum(writer.getDB('admin').auth('shwriter', 'shwriter-pwd').ok, 1, 'db.auth as the writer');
writer.getDB('elsewhere').y.insertOne({ _id: 1 });
checkEq(test.getSiblingDB('elsewhere').y.countDocuments({}), 1, 'writer wrote');
admin.dropUser('shwriter');
const dropped = checkThrows(() => writer.getDB('elsewhere').y.insertOne({ _id: 2 }), 'insert by a dropped user');
checkCode(dropped, 13, 'Unauthorized', 'dropped user');
checkEq(admin.getUser('shwriter'), null, 'db.getUser after dropUser');

checkEq(test.x.countDocuments({}), 1, 'nothing was written by refused commands');
admin.dropUser('shreader');
print('OK');
