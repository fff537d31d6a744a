// Node driver traffic for the seed corpora (run by capture.sh with DOCGATE_URI set to the
// recording relay): inserts, finds with filters, sorts and projections, updates with
// operators, pipelines and arrayFilters, aggregation, bulk writes. Errors are ignored.
// The driver is the one tests/clients/node installs: capture.sh runs this from there.
import { createRequire } from 'node:module';

const require = createRequire(`${process.cwd()}/package.json`);
const { MongoClient, Long, ObjectId, Decimal128 } = require('mongodb');

const client = new MongoClient(process.env.DOCGATE_URI, { serverSelectionTimeoutMS: 5000 });
await client.connect();
const c = client.db('fuzz_seed').collection('node');
const attempt = async (step) => { try { await step(); } catch (_) { /* part of the traffic */ } };
await attempt(() => c.drop());
await c.insertMany([
  { _id: 1, name: 'ann', qty: 5, tags: ['red', 'blue'], dims: { h: 14, w: 21 } },
  { _id: new ObjectId(), name: 'bob', qty: Long.fromNumber(20), items: [{ sku: 'a', n: 1 }, { sku: 'b', n: 4 }] },
  { _id: 'x', name: 'cy', price: Decimal128.fromString('3.25'), when: new Date(0) },
]);
for (const filter of [
  { qty: { $gt: 4 } }, { tags: { $in: ['red'] } }, { 'dims.h': { $lt: 15 } }, { items: { $elemMatch: { n: { $gt: 2 } } } },
  { $or: [{ name: /^a/ }, { price: { $exists: true } }] }, { when: { $lte: new Date() } }, { $expr: { $eq: ['$name', 'ann'] } },
]) {
  await attempt(() => c.find(filter).sort({ qty: -1 }).limit(2).project({ name: 1 }).toArray());
  await attempt(() => c.countDocuments(filter));
}
await attempt(() => c.updateOne({ _id: 1 }, { $set: { 'dims.d': 2 }, $push: { tags: 'green' } }));
await attempt(() => c.updateMany({}, [{ $set: { total: { $multiply: ['$qty', 2] } } }]));
await attempt(() => c.updateOne({ name: 'bob' }, { $inc: { 'items.$[it].n': 1 } }, { arrayFilters: [{ 'it.sku': 'b' }] }));
await attempt(() => c.updateOne({ _id: 42 }, { $setOnInsert: { created: true } }, { upsert: true }));
await attempt(() => c.findOneAndReplace({ _id: 'x' }, { name: 'cy2' }, { returnDocument: 'after' }));
await attempt(() => c.aggregate([{ $match: { qty: { $gte: 1 } } }, { $group: { _id: null, s: { $sum: '$qty' } } }]).toArray());
await attempt(() => c.aggregate([{ $sortByCount: '$name' }, { $skip: 0 }]).toArray());
await attempt(() => c.bulkWrite([{ insertOne: { document: { _id: 7 } } }, { deleteOne: { filter: { _id: 7 } } }]));
await attempt(() => c.deleteMany({ qty: { $lt: 0 } }));
await client.close();
console.log('node traffic done');
