// Transactions through the MongoDB Node.js driver (7.x) and Mongoose (9.x), run with `node --test`.
//
// The driver's convenient API: `session.withTransaction(callback)` commits the callback's writes
// and returns its result; a throw inside the callback aborts (nothing written) and comes back
// out; writes are invisible to a second client until commit; a second writer of a document is
// told 112 WriteConflict (TransientTransactionError) at once, and withTransaction retries it to
// success once the first transaction commits. Mongoose: `connection.transaction()`
// over two models writes both on success and neither on a throw.
//
// The server must already be running: tests/run_all.sh starts a fresh docgate and passes its
// address in DOCGATE_URI, e.g.
//   DOCGATE_URI='mongodb://127.0.0.1:PORT/?directConnection=true' node --test transactions_test.mjs

import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { MongoClient, MongoServerError } from 'mongodb';
import mongoose from 'mongoose';

const uri = process.env.DOCGATE_URI;
if (!uri) {
  console.error('DOCGATE_URI is not set (tests/run_all.sh sets it)');
  process.exit(2);
}
const OPTS = { serverSelectionTimeoutMS: 10000, socketTimeoutMS: 15000 };
// A step the server should answer at once; a hang fails the test instead.
const STEP_TIMEOUT_MS = 10000;

function within(ms, promise, what) {
  let timer;
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: no answer within ${ms} ms`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

class Boom extends Error {}

describe('transactions with the Node.js driver', () => {
  let client;
  let other;
  let db;
  let otherDb;

  before(async () => {
    client = new MongoClient(uri, OPTS);
    other = new MongoClient(uri, OPTS);
    await client.connect();
    await other.connect();
    db = client.db('node_txn');
    otherDb = other.db('node_txn');
  });

  after(async () => {
    await client?.close();
    await other?.close();
  });

  test('withTransaction commits and returns the callback result', async () => {
    const coll = db.collection('commit');
    await coll.insertOne({ _id: 0, n: 0 });
    const session = client.startSession();
    try {
      const result = await session.withTransaction(async () => {
        await coll.insertOne({ _id: 1, n: 1 }, { session });
        await coll.updateOne({ _id: 0 }, { $inc: { n: 5 } }, { session });
        assert.equal(await coll.countDocuments({}, { session }), 2);
        return 'committed';
      });
      assert.equal(result, 'committed');
    } finally {
      await session.endSession();
    }
    const seen = await otherDb.collection('commit').find({}).sort({ _id: 1 }).toArray();
    assert.deepEqual(seen, [
      { _id: 0, n: 5 },
      { _id: 1, n: 1 },
    ]);
  });

  test('a throw inside withTransaction aborts and is rethrown', async () => {
    const coll = db.collection('abort');
    await coll.insertOne({ _id: 0, n: 0 });
    const session = client.startSession();
    try {
      await assert.rejects(
        session.withTransaction(async () => {
          await coll.insertOne({ _id: 1 }, { session });
          await coll.updateOne({ _id: 0 }, { $set: { n: 99 } }, { session });
          throw new Boom('callback failed');
        }),
        Boom,
      );
      assert.equal(session.inTransaction(), false);
    } finally {
      await session.endSession();
    }
    assert.deepEqual(await otherDb.collection('abort').find({}).toArray(), [{ _id: 0, n: 0 }]);
  });

  test('startTransaction / abortTransaction by hand', async () => {
    const coll = db.collection('manual');
    const session = client.startSession();
    try {
      session.startTransaction();
      await coll.insertMany([{ _id: 1 }, { _id: 2 }], { session });
      assert.equal((await coll.find({}, { session }).toArray()).length, 2);
      await session.abortTransaction();
      session.startTransaction();
      await coll.insertOne({ _id: 3 }, { session });
      await session.commitTransaction();
    } finally {
      await session.endSession();
    }
    assert.deepEqual(await otherDb.collection('manual').find({}).toArray(), [{ _id: 3 }]);
  });

  test('writes are invisible to a second client until commit', async () => {
    const coll = db.collection('isolation');
    const outside = otherDb.collection('isolation');
    await coll.insertOne({ _id: 0, v: 'old' });
    const session = client.startSession();
    try {
      await session.withTransaction(async () => {
        await coll.insertOne({ _id: 1, v: 'new' }, { session });
        await coll.updateOne({ _id: 0 }, { $set: { v: 'changed' } }, { session });
        assert.deepEqual(await coll.findOne({ _id: 1 }, { session }), { _id: 1, v: 'new' });
        assert.equal(await within(STEP_TIMEOUT_MS, outside.findOne({ _id: 1 }), 'outside read'), null);
        assert.deepEqual(await within(STEP_TIMEOUT_MS, outside.findOne({ _id: 0 }), 'outside read'), {
          _id: 0,
          v: 'old',
        });
        assert.equal(await outside.countDocuments({}), 1);
      });
    } finally {
      await session.endSession();
    }
    assert.deepEqual(await outside.find({}).sort({ _id: 1 }).toArray(), [
      { _id: 0, v: 'changed' },
      { _id: 1, v: 'new' },
    ]);
  });

  test('the second writer of a document gets WriteConflict at once', async () => {
    const coll = db.collection('conflict');
    await coll.insertOne({ _id: 1, n: 0 });
    const first = client.startSession();
    const second = other.startSession();
    try {
      first.startTransaction();
      await coll.updateOne({ _id: 1 }, { $inc: { n: 1 } }, { session: first });
      second.startTransaction();
      const started = Date.now();
      await assert.rejects(
        within(
          STEP_TIMEOUT_MS,
          otherDb.collection('conflict').updateOne({ _id: 1 }, { $inc: { n: 10 } }, { session: second }),
          'second writer',
        ),
        (err) => {
          assert.ok(err instanceof MongoServerError, `not a server error: ${err}`);
          assert.equal(err.code, 112);
          assert.equal(err.codeName, 'WriteConflict');
          assert.ok(err.hasErrorLabel('TransientTransactionError'), `labels: ${err.errorLabels}`);
          return true;
        },
      );
      assert.ok(Date.now() - started < 5000, 'the WriteConflict came only after a wait');
      await second.abortTransaction();
      await first.commitTransaction();
    } finally {
      await first.endSession();
      await second.endSession();
    }
    assert.deepEqual(await otherDb.collection('conflict').findOne({ _id: 1 }), { _id: 1, n: 1 });
  });

  test('withTransaction retries a WriteConflict until the other transaction commits', async () => {
    const coll = db.collection('retry');
    await coll.insertOne({ _id: 1, n: 0 });
    const first = client.startSession();
    const second = other.startSession();
    const conflicts = [];
    let attempts = 0;
    let sawConflict;
    const conflicted = new Promise((resolve) => {
      sawConflict = resolve;
    });
    try {
      first.startTransaction();
      await coll.updateOne({ _id: 1 }, { $inc: { n: 1 } }, { session: first });
      const retried = second.withTransaction(async () => {
        attempts += 1;
        try {
          await otherDb.collection('retry').updateOne({ _id: 1 }, { $inc: { n: 10 } }, { session: second });
        } catch (err) {
          conflicts.push(err);
          sawConflict();
          throw err;
        }
      });
      await within(STEP_TIMEOUT_MS, conflicted, 'the first attempt of withTransaction');
      await first.commitTransaction();
      await within(60000, retried, 'withTransaction after the conflict');
    } finally {
      await first.endSession();
      await second.endSession();
    }
    assert.ok(attempts >= 2, `attempts: ${attempts}`);
    assert.equal(conflicts[0].code, 112);
    assert.ok(conflicts[0].hasErrorLabel('TransientTransactionError'));
    assert.deepEqual(await otherDb.collection('retry').findOne({ _id: 1 }), { _id: 1, n: 11 });
  });
});

describe('transactions with Mongoose', () => {
  let conn;
  let Account;
  let Transfer;
  let other;

  before(async () => {
    conn = await mongoose.createConnection(uri, { ...OPTS, dbName: 'mongoose_txn' }).asPromise();
    Account = conn.model('Account', new mongoose.Schema({ _id: String, balance: Number }));
    Transfer = conn.model('Transfer', new mongoose.Schema({ from: String, to: String, amount: Number }));
    await Account.init();
    await Transfer.init();
    await Account.create([
      { _id: 'alice', balance: 100 },
      { _id: 'bob', balance: 0 },
    ]);
    other = new MongoClient(uri, OPTS);
    await other.connect();
  });

  after(async () => {
    await conn?.close();
    await other?.close();
  });

  async function balances() {
    const docs = await other.db('mongoose_txn').collection('accounts').find({}).sort({ _id: 1 }).toArray();
    return Object.fromEntries(docs.map((d) => [d._id, d.balance]));
  }

  async function transfers() {
    return other.db('mongoose_txn').collection('transfers').countDocuments({});
  }

  test('connection.transaction() commits writes to both models', async () => {
    await conn.transaction(async (session) => {
      await Account.updateOne({ _id: 'alice' }, { $inc: { balance: -30 } }, { session });
      await Account.updateOne({ _id: 'bob' }, { $inc: { balance: 30 } }, { session });
      await Transfer.create([{ from: 'alice', to: 'bob', amount: 30 }], { session });
      const bob = await Account.findById('bob').session(session);
      assert.equal(bob.balance, 30);
      assert.deepEqual(await balances(), { alice: 100, bob: 0 }, 'visible outside before commit');
    });
    assert.deepEqual(await balances(), { alice: 70, bob: 30 });
    assert.equal(await transfers(), 1);
  });

  test('a throw inside connection.transaction() writes neither model', async () => {
    await assert.rejects(
      conn.transaction(async (session) => {
        const alice = await Account.findById('alice').session(session);
        alice.balance -= 50;
        await alice.save({ session });
        await Transfer.create([{ from: 'alice', to: 'bob', amount: 50 }], { session });
        throw new Boom('insufficient approval');
      }),
      Boom,
    );
    assert.deepEqual(await balances(), { alice: 70, bob: 30 });
    assert.equal(await transfers(), 1);
  });
});
