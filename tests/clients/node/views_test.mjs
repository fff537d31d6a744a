// Views and collMod through the MongoDB Node.js driver (7.x) and Mongoose (9.x), run with
// `node --test`.
//
// Mongoose's index management: `Model.syncIndexes()` reads listIndexes, builds the schema's
// indexes with createIndexes and drops the others with dropIndexes; with `hideIndexes: true`
// it hides them with `collMod` instead (the planner stops using them, listIndexes says
// `hidden: true`). A Mongoose model over a view (`createCollection({viewOn, pipeline})`)
// reads through the view and its writes are refused with 166.
//
// The server must already be running: tests/run_all.sh starts a fresh docgate and passes its
// address in DOCGATE_URI, e.g.
//   DOCGATE_URI='mongodb://127.0.0.1:PORT/?directConnection=true' node --test views_test.mjs

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

async function rejectsWithCode(promise, code, what) {
  await assert.rejects(promise, (err) => {
    // Mongoose has its own copy of the driver: its errors are not this module's classes.
    assert.equal(err.name === 'MongoServerError' || err instanceof MongoServerError || err.name === 'MongoBulkWriteError', true, `${what}: ${err}`);
    assert.equal(err.code, code, `${what}: ${err.message}`);
    return true;
  });
}

describe('views with the Node.js driver', () => {
  let client;
  let db;

  before(async () => {
    client = new MongoClient(uri, OPTS);
    await client.connect();
    db = client.db('node_views');
    await db.dropDatabase();
    await db.collection('orders').insertMany([
      { _id: 1, status: 'open', total: 10 },
      { _id: 2, status: 'closed', total: 25 },
      { _id: 3, status: 'open', total: 40 },
    ]);
    await db.createCollection('open_orders', {
      viewOn: 'orders',
      pipeline: [{ $match: { status: 'open' } }, { $project: { status: 0 } }],
    });
  });

  after(async () => {
    await client?.close();
  });

  test('a view reads its pipeline, then the query', async () => {
    const view = db.collection('open_orders');
    assert.deepEqual(await view.find({}).sort({ _id: 1 }).toArray(), [
      { _id: 1, total: 10 },
      { _id: 3, total: 40 },
    ]);
    assert.deepEqual(await view.find({ total: { $gt: 20 } }).toArray(), [{ _id: 3, total: 40 }]);
    assert.equal(await view.countDocuments({}), 2);
    assert.equal(await view.estimatedDocumentCount(), 2);
    assert.deepEqual(await view.distinct('total'), [10, 40]);
    const [sum] = await view.aggregate([{ $group: { _id: null, t: { $sum: '$total' } } }]).toArray();
    assert.equal(sum.t, 50);
  });

  test('listCollections shows the view', async () => {
    const [info] = await db.listCollections({ name: 'open_orders' }).toArray();
    assert.equal(info.type, 'view');
    assert.equal(info.options.viewOn, 'orders');
    assert.equal(info.info.readOnly, true);
  });

  test('writes to a view are 166', async () => {
    const view = db.collection('open_orders');
    await rejectsWithCode(view.insertOne({ total: 1 }), 166, 'insertOne');
    await rejectsWithCode(view.updateMany({}, { $set: { total: 0 } }), 166, 'updateMany');
    await rejectsWithCode(view.deleteOne({}), 166, 'deleteOne');
    await rejectsWithCode(view.createIndex({ total: 1 }), 166, 'createIndex');
  });

  test('collMod redefines the view', async () => {
    await db.command({ collMod: 'open_orders', pipeline: [{ $match: { status: 'closed' } }] });
    assert.deepEqual(await db.collection('open_orders').find({}).toArray(), [
      { _id: 2, status: 'closed', total: 25 },
    ]);
  });
});

describe('Mongoose syncIndexes and views', () => {
  let conn;

  before(async () => {
    conn = await mongoose.createConnection(uri, { ...OPTS, dbName: 'mongoose_views' }).asPromise();
    await conn.dropDatabase();
  });

  after(async () => {
    await conn?.close();
  });

  test('syncIndexes builds, hides (collMod) and drops indexes', async () => {
    const first = new mongoose.Schema({ email: { type: String, unique: true }, age: Number, city: String });
    first.index({ age: 1 });
    first.index({ city: 1, age: -1 });
    const UserV1 = conn.model('UserV1', first, 'users');
    await UserV1.syncIndexes();
    await UserV1.create([
      { email: 'a@x', age: 30, city: 'Oslo' },
      { email: 'b@x', age: 40, city: 'Bergen' },
    ]);
    let indexes = await UserV1.listIndexes();
    assert.deepEqual(indexes.map((i) => i.name).sort(), ['_id_', 'age_1', 'city_1_age_-1', 'email_1']);

    // The next version of the schema no longer has {age: 1}: hidden first, by collMod.
    const second = new mongoose.Schema({ email: { type: String, unique: true }, age: Number, city: String });
    second.index({ city: 1, age: -1 });
    const UserV2 = conn.model('UserV2', second, 'users');
    const diff = await UserV2.diffIndexes();
    assert.deepEqual(diff.toDrop, ['age_1']);
    assert.deepEqual(diff.toCreate, []);
    await UserV2.syncIndexes({ hideIndexes: true });
    indexes = await UserV2.listIndexes();
    const age = indexes.find((i) => i.name === 'age_1');
    assert.equal(age.hidden, true);
    const plan = await conn.db.collection('users').find({ age: 30 }).explain();
    assert.equal(JSON.stringify(plan.queryPlanner.winningPlan).includes('IXSCAN'), false);
    assert.equal(await UserV2.countDocuments({ age: 30 }), 1);

    // Then dropped.
    const dropped = await UserV2.syncIndexes();
    assert.deepEqual(dropped, ['age_1']);
    indexes = await UserV2.listIndexes();
    assert.deepEqual(indexes.map((i) => i.name).sort(), ['_id_', 'city_1_age_-1', 'email_1']);
    // The unique index is still enforced.
    await rejectsWithCode(UserV2.create({ email: 'a@x' }), 11000, 'duplicate email');
  });

  test('a model over a view reads through it and cannot write', async () => {
    const Item = conn.model('Item', new mongoose.Schema({ name: String, price: Number }), 'items');
    await Item.create([
      { name: 'cheap', price: 5 },
      { name: 'dear', price: 500 },
    ]);
    const Dear = conn.model(
      'Dear',
      new mongoose.Schema({ name: String, price: Number }, { autoCreate: false, autoIndex: false }),
      'dear_items',
    );
    await Dear.createCollection({ viewOn: 'items', pipeline: [{ $match: { price: { $gte: 100 } } }] });
    const found = await Dear.find({}).lean();
    assert.deepEqual(found.map((d) => d.name), ['dear']);
    assert.equal(await Dear.countDocuments(), 1);
    await rejectsWithCode(Dear.create({ name: 'x', price: 1000 }), 166, 'create on a view');
  });
});
