// CRUD through the MongoDB Node.js driver (7.x), run with `node --test`.
//
// The server must already be running: tests/run_all.sh starts a fresh docgate
// and passes its address in DOCGATE_URI, e.g.
//   DOCGATE_URI='mongodb://127.0.0.1:PORT/?directConnection=true' node --test crud_test.mjs

import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { Long, MongoClient, MongoServerError, ObjectId } from 'mongodb';

const uri = process.env.DOCGATE_URI;
if (!uri) {
  console.error('DOCGATE_URI is not set (tests/run_all.sh sets it)');
  process.exit(2);
}

describe('docgate with the Node.js driver', () => {
  let client;
  let db;

  before(async () => {
    client = new MongoClient(uri, { serverSelectionTimeoutMS: 10000 });
    await client.connect();
    db = client.db('node_crud');
  });

  after(async () => {
    await client?.close();
  });

  test('connect and ping', async () => {
    const reply = await client.db('admin').command({ ping: 1 });
    assert.equal(reply.ok, 1);
    const hello = await client.db('admin').command({ hello: 1 });
    assert.equal(hello.isWritablePrimary, true);
    assert.equal(hello.maxWireVersion, 21);
  });

  test('insertMany and find', async () => {
    const coll = db.collection('people');
    const result = await coll.insertMany([
      { name: 'ann', age: 31, city: 'Oslo' },
      { name: 'bob', age: 25, city: 'Bergen' },
      { name: 'cid', age: 40, city: 'Oslo' },
    ]);
    assert.equal(result.insertedCount, 3);
    const ids = Object.values(result.insertedIds);
    assert.equal(ids.length, 3);
    for (const id of ids) assert.ok(id instanceof ObjectId);

    const oslo = await coll.find({ city: 'Oslo' }, { projection: { _id: 0 } }).sort({ age: -1 }).toArray();
    assert.deepEqual(oslo, [
      { name: 'cid', age: 40, city: 'Oslo' },
      { name: 'ann', age: 31, city: 'Oslo' },
    ]);
    const first = await coll.findOne({ _id: ids[1] });
    assert.deepEqual(first, { _id: ids[1], name: 'bob', age: 25, city: 'Bergen' });
    assert.equal(await coll.findOne({ name: 'nobody' }), null);
  });

  test('cursor over several batches', async () => {
    const coll = db.collection('batches');
    const docs = Array.from({ length: 60 }, (_, i) => ({ _id: i, v: `doc ${i}` }));
    await coll.insertMany(docs);

    const seen = [];
    for await (const doc of coll.find().sort({ _id: 1 }).batchSize(7)) seen.push(doc);
    assert.deepEqual(seen, docs);

    // The same through the commands, to see the batches themselves.
    let reply = await db.command({ find: 'batches', sort: { _id: 1 }, batchSize: 7 });
    const batches = [reply.cursor.firstBatch];
    let id = reply.cursor.id;
    while (!Long.fromValue(id).isZero()) {
      reply = await db.command({ getMore: Long.fromValue(id), collection: 'batches', batchSize: 7 });
      batches.push(reply.cursor.nextBatch);
      id = reply.cursor.id;
      assert.ok(batches.length <= 20, 'the cursor ends');
    }
    assert.ok(batches.every((b) => b.length <= 7), `batch sizes ${batches.map((b) => b.length)}`);
    assert.ok(batches.length >= 9, `${batches.length} batches`);
    assert.deepEqual(batches.flat(), docs);
  });

  test('updateOne and updateMany', async () => {
    const coll = db.collection('updates');
    await coll.insertMany([
      { _id: 1, g: 'a', n: 1 },
      { _id: 2, g: 'a', n: 2 },
      { _id: 3, g: 'b', n: 3 },
    ]);
    const one = await coll.updateOne({ _id: 3 }, { $set: { g: 'c' } });
    assert.equal(one.matchedCount, 1);
    assert.equal(one.modifiedCount, 1);

    const many = await coll.updateMany({ g: 'a' }, { $inc: { n: 10 }, $set: { touched: true } });
    assert.equal(many.matchedCount, 2);
    assert.equal(many.modifiedCount, 2);
    assert.deepEqual(await coll.find().sort({ _id: 1 }).toArray(), [
      { _id: 1, g: 'a', n: 11, touched: true },
      { _id: 2, g: 'a', n: 12, touched: true },
      { _id: 3, g: 'c', n: 3 },
    ]);

    const upsert = await coll.updateOne({ _id: 4 }, { $set: { g: 'd' } }, { upsert: true });
    assert.equal(upsert.upsertedCount, 1);
    assert.equal(upsert.upsertedId, 4);
    assert.deepEqual(await coll.findOne({ _id: 4 }), { _id: 4, g: 'd' });
  });

  test('deleteMany', async () => {
    const coll = db.collection('deletes');
    await coll.insertMany(Array.from({ length: 10 }, (_, i) => ({ _id: i, even: i % 2 === 0 })));
    const result = await coll.deleteMany({ even: true });
    assert.equal(result.deletedCount, 5);
    assert.deepEqual(
      (await coll.find().sort({ _id: 1 }).toArray()).map((d) => d._id),
      [1, 3, 5, 7, 9],
    );
    const none = await coll.deleteMany({ even: true });
    assert.equal(none.deletedCount, 0);
  });

  test('countDocuments and estimatedDocumentCount', async () => {
    const coll = db.collection('counts');
    await coll.insertMany(Array.from({ length: 25 }, (_, i) => ({ i })));
    assert.equal(await coll.countDocuments(), 25);
    assert.equal(await coll.countDocuments({ i: { $gte: 20 } }), 5);
    assert.equal(await coll.countDocuments({}, { skip: 5, limit: 10 }), 10);
    assert.equal(await coll.estimatedDocumentCount(), 25);
  });

  test('distinct', async () => {
    const coll = db.collection('distinct');
    await coll.insertMany([
      { color: 'red', size: 1 },
      { color: 'blue', size: 2 },
      { color: ['green', 'red'], size: 3 },
      { size: 4 },
    ]);
    assert.deepEqual((await coll.distinct('color')).sort(), ['blue', 'green', 'red']);
    assert.deepEqual((await coll.distinct('color', { size: { $gte: 2 } })).sort(), ['blue', 'green', 'red']);
    assert.deepEqual((await coll.distinct('color', { size: 3 })).sort(), ['green', 'red']);
  });

  test('duplicate key is a MongoServerError 11000', async () => {
    const coll = db.collection('dups');
    await coll.insertOne({ _id: 'x' });
    await assert.rejects(coll.insertOne({ _id: 'x' }), (err) => {
      assert.ok(err instanceof MongoServerError);
      assert.equal(err.code, 11000);
      assert.deepEqual(err.keyValue, { _id: 'x' });
      return true;
    });
  });

  test('drop', async () => {
    const coll = db.collection('dropme');
    await coll.insertOne({ a: 1 });
    assert.ok((await db.listCollections({}, { nameOnly: true }).toArray()).some((c) => c.name === 'dropme'));
    assert.equal(await coll.drop(), true);
    const names = (await db.listCollections({}, { nameOnly: true }).toArray()).map((c) => c.name);
    assert.ok(!names.includes('dropme'), `collections after drop: ${names}`);
    assert.equal(await coll.countDocuments(), 0);
  });
});
