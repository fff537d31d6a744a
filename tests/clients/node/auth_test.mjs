// Authentication through the MongoDB Node.js driver (7.x), run with `node --test`:
// SCRAM-SHA-256, SCRAM-SHA-1 and PLAIN (authSource $external) log in, insert and find;
// a wrong password or an unknown user is refused with 18; a read-only user's insert with 13.
//
// The server must already be running with auth on (the default). tests/run_all.sh
// (suite_auth_clients) passes its address without credentials in DOCGATE_URI and a root
// user of admin in DOCGATE_ADMIN_USER / DOCGATE_ADMIN_PASSWORD:
//   DOCGATE_URI='mongodb://127.0.0.1:PORT/?directConnection=true' \
//   DOCGATE_ADMIN_USER=root DOCGATE_ADMIN_PASSWORD=... node --test auth_test.mjs
// Without DOCGATE_ADMIN_USER the server must have no users yet: the suite creates its root
// user over the localhost exception.

import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { MongoClient, MongoServerError } from 'mongodb';

const uri = process.env.DOCGATE_URI;
if (!uri) {
  console.error('DOCGATE_URI is not set (tests/run_all.sh sets it)');
  process.exit(2);
}
const adminUser = process.env.DOCGATE_ADMIN_USER ?? 'node_root';
const adminPassword = process.env.DOCGATE_ADMIN_PASSWORD ?? 'node-root-pwd';
const DB = 'node_auth';
const OPTS = { serverSelectionTimeoutMS: 10000, maxPoolSize: 1 };

// The server's URI with credentials and extra options in it, as a user would write it.
function uriWith(user, password, params = '') {
  const withUser = uri.replace(/^mongodb:\/\//, `mongodb://${encodeURIComponent(user)}:${encodeURIComponent(password)}@`);
  if (!params) return withUser;
  if (withUser.includes('?')) return `${withUser}&${params}`;
  return withUser.replace(/\/?$/, `/?${params}`);
}

async function withClient(clientUri, fn) {
  const client = new MongoClient(clientUri, OPTS);
  try {
    return await fn(client);
  } finally {
    await client.close();
  }
}

// Connects and runs one find; returns the error it was refused with.
async function refusal(clientUri) {
  let err = null;
  await withClient(clientUri, async (client) => {
    try {
      await client.connect();
      await client.db(DB).collection('items').findOne({});
    } catch (e) {
      err = e;
    }
  });
  assert.ok(err, 'expected the login to be refused');
  return err;
}

function assertAuthFailed(err) {
  assert.ok(err instanceof MongoServerError, `a server error, got ${err}`);
  assert.equal(err.code, 18, err.message);
  assert.equal(err.codeName, 'AuthenticationFailed');
  assert.equal(err.message, 'Authentication failed.');
}

const MECHANISMS = [
  { name: 'SCRAM-SHA-256', params: 'authMechanism=SCRAM-SHA-256&authSource=admin' },
  { name: 'SCRAM-SHA-1', params: 'authMechanism=SCRAM-SHA-1&authSource=admin' },
  { name: 'PLAIN', params: 'authMechanism=PLAIN&authSource=%24external' },
];

describe('docgate authentication with the Node.js driver', () => {
  let admin;

  before(async () => {
    if (process.env.DOCGATE_ADMIN_USER === undefined) {
      await withClient(uri, (c) => c.db('admin').command({ createUser: adminUser, pwd: adminPassword, roles: ['root'] }));
    }
    admin = new MongoClient(uriWith(adminUser, adminPassword, 'authSource=admin'), OPTS);
    await admin.connect();
    await admin.db('admin').command({
      createUser: 'node_rw',
      pwd: 'node-rw-pwd',
      roles: [{ role: 'readWrite', db: DB }],
    });
    await admin.db('admin').command({
      createUser: 'node_ro',
      pwd: 'node-ro-pwd',
      roles: [{ role: 'read', db: DB }],
    });
  });

  after(async () => {
    if (admin) {
      for (const user of ['node_rw', 'node_ro']) {
        await admin.db('admin').command({ dropUser: user }).catch(() => {});
      }
      await admin.close();
    }
  });

  test('without credentials a command is refused with 13', async () => {
    await withClient(uri, async (client) => {
      await assert.rejects(client.db(DB).collection('items').findOne({}), (err) => {
        assert.equal(err.code, 13, err.message);
        assert.equal(err.codeName, 'Unauthorized');
        assert.equal(err.message, 'Command find requires authentication');
        return true;
      });
    });
  });

  for (const mech of MECHANISMS) {
    test(`${mech.name}: connect, insert and find`, async () => {
      await withClient(uriWith('node_rw', 'node-rw-pwd', mech.params), async (client) => {
        await client.connect();
        const coll = client.db(DB).collection(`by_${mech.name.replace(/-/g, '_')}`);
        const { insertedId } = await coll.insertOne({ mech: mech.name, n: 1 });
        assert.deepEqual(await coll.findOne({ _id: insertedId }), { _id: insertedId, mech: mech.name, n: 1 });
        assert.deepEqual(await coll.find({}, { projection: { _id: 0 } }).toArray(), [{ mech: mech.name, n: 1 }]);
        const status = await client.db('admin').command({ connectionStatus: 1 });
        assert.deepEqual(status.authInfo.authenticatedUsers, [{ user: 'node_rw', db: 'admin' }]);
      });
    });

    test(`${mech.name}: a wrong password and an unknown user are refused with 18`, async () => {
      assertAuthFailed(await refusal(uriWith('node_ro', 'wrong-pwd', mech.params)));
      assertAuthFailed(await refusal(uriWith('node_nobody', 'node-ro-pwd', mech.params)));
    });
  }

  test('the driver negotiates SCRAM-SHA-256 when no mechanism is given', async () => {
    const count = async () => {
      const s = await admin.db('admin').command({ serverStatus: 1 });
      const m = s.security.authentication.mechanisms['SCRAM-SHA-256'];
      return m.authenticate.successful + m.speculativeAuthenticate.successful;
    };
    const before256 = await count();
    await withClient(uriWith('node_rw', 'node-rw-pwd', 'authSource=admin'), async (client) => {
      await client.db(DB).collection('negotiated').insertOne({ a: 1 });
    });
    assert.equal(await count(), before256 + 1);
  });

  test('a read-only user can find but its insert is refused with 13', async () => {
    await admin.db(DB).collection('ro').insertOne({ _id: 1 });
    await withClient(uriWith('node_ro', 'node-ro-pwd', 'authSource=admin'), async (client) => {
      const coll = client.db(DB).collection('ro');
      assert.deepEqual(await coll.find().toArray(), [{ _id: 1 }]);
      await assert.rejects(coll.insertOne({ _id: 2 }), (err) => {
        assert.ok(err instanceof MongoServerError, String(err));
        assert.equal(err.code, 13, err.message);
        assert.equal(err.codeName, 'Unauthorized');
        assert.match(err.message, /^not authorized on node_auth to execute command \{ ?insert/);
        return true;
      });
    });
    assert.equal(await admin.db(DB).collection('ro').countDocuments({}), 1);
  });
});
