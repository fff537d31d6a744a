// CRUD with mongosh: inserts, queries with filter/sort/limit, updates, deletes,
// counts, distinct and drop.
// Run: mongosh "mongodb://127.0.0.1:PORT/test?directConnection=true" --quiet --file crud.js
load(require('path').join(__dirname, '_lib.js'));

const d = scriptDb('mongosh_crud');
const c = d.items;

// insertOne / insertMany
const one = c.insertOne({ _id: 1, name: 'ann', age: 31, city: 'Oslo', tags: ['a', 'b'] });
checkEq(one.acknowledged, true, 'insertOne acknowledged');
checkEq(one.insertedId, 1, 'insertOne insertedId');

const many = c.insertMany([
  { _id: 2, name: 'bob', age: 25, city: 'Bergen', tags: ['b'] },
  { _id: 3, name: 'cid', age: 40, city: 'Oslo', tags: [] },
  { _id: 4, name: 'dee', age: 19, city: 'Tromsø' },
  { _id: 5, name: 'eve', age: 25, city: 'Oslo', nick: 'e' },
]);
checkEq(many.acknowledged, true, 'insertMany acknowledged');
checkEq(Object.values(many.insertedIds), [2, 3, 4, 5], 'insertMany insertedIds');

const generated = c.insertOne({ name: 'gen' });
check(generated.insertedId instanceof ObjectId, 'generated _id is an ObjectId');
checkEq(c.findOne({ _id: generated.insertedId }), { _id: generated.insertedId, name: 'gen' }, 'findOne by ObjectId');
c.deleteOne({ _id: generated.insertedId });

// find
const all = c.find().sort({ _id: 1 }).toArray();
checkEq(all.length, 5, 'find().toArray() length');
checkEq(all[0], { _id: 1, name: 'ann', age: 31, city: 'Oslo', tags: ['a', 'b'] }, 'first document');

const ids = (cursor) => cursor.toArray().map((doc) => doc._id);
checkEq(ids(c.find({ city: 'Oslo' }).sort({ _id: 1 })), [1, 3, 5], 'equality filter');
checkEq(ids(c.find({ age: { $gt: 24, $lt: 35 } }).sort({ _id: 1 })), [1, 2, 5], 'range filter');
checkEq(ids(c.find({ name: { $in: ['bob', 'dee', 'zed'] } }).sort({ _id: 1 })), [2, 4], '$in filter');
checkEq(ids(c.find({ $or: [{ age: 19 }, { nick: { $exists: true } }] }).sort({ _id: 1 })), [4, 5], '$or/$exists');
checkEq(ids(c.find({ tags: 'b' }).sort({ _id: 1 })), [1, 2], 'array element match');
checkEq(ids(c.find({}).sort({ age: -1, _id: 1 }).limit(3)), [3, 1, 2], 'sort desc + limit');
checkEq(ids(c.find({}).sort({ age: 1, _id: -1 }).skip(1).limit(2)), [5, 2], 'sort + skip + limit');
checkEq(c.find({ _id: 2 }, { name: 1, _id: 0 }).toArray(), [{ name: 'bob' }], 'projection');
checkEq(c.findOne({ name: 'nobody' }), null, 'findOne without match');

// updateOne / updateMany
const u1 = c.updateOne({ _id: 2 }, { $set: { city: 'Oslo' }, $inc: { age: 1 } });
checkEq([u1.matchedCount, u1.modifiedCount], [1, 1], 'updateOne counts');
checkEq(c.findOne({ _id: 2 }, { _id: 0, age: 1, city: 1 }), { age: 26, city: 'Oslo' }, 'updateOne result');

const um = c.updateMany({ city: 'Oslo' }, { $set: { visited: true } });
checkEq([um.matchedCount, um.modifiedCount], [4, 4], 'updateMany counts');
checkEq(c.countDocuments({ visited: true }), 4, 'updateMany result');

const unset = c.updateOne({ _id: 5 }, { $unset: { nick: '' } });
checkEq(unset.modifiedCount, 1, '$unset modifiedCount');
checkEq(c.findOne({ _id: 5 }).nick, undefined, '$unset removed the field');

const ups = c.updateOne({ _id: 9 }, { $set: { name: 'new' } }, { upsert: true });
checkEq(ups.upsertedCount, 1, 'upsertedCount');
checkEq(ups.insertedId, 9, 'upserted _id (mongosh calls it insertedId)');
checkEq(c.findOne({ _id: 9 }), { _id: 9, name: 'new' }, 'upserted document');

const rep = c.replaceOne({ _id: 9 }, { name: 'replaced', n: 1 });
checkEq(rep.modifiedCount, 1, 'replaceOne modifiedCount');
checkEq(c.findOne({ _id: 9 }), { _id: 9, name: 'replaced', n: 1 }, 'replaced document');

// countDocuments / estimatedDocumentCount / distinct
checkEq(c.countDocuments({}), 6, 'countDocuments');
checkEq(c.countDocuments({ age: { $gte: 26 } }), 3, 'countDocuments with filter');
checkEq(c.estimatedDocumentCount(), 6, 'estimatedDocumentCount');
checkEq(c.distinct('city').sort(), ['Oslo', 'Tromsø'], 'distinct');
checkEq(c.distinct('tags').sort(), ['a', 'b'], 'distinct unwinds arrays');
checkEq(c.distinct('name', { age: { $lt: 26 } }).sort(), ['dee', 'eve'], 'distinct with filter');

// duplicate key
const dup = checkThrows(() => c.insertOne({ _id: 1 }), 'duplicate _id');
checkEq(dup.code, 11000, 'duplicate key code');

// deleteOne / deleteMany
const d1 = c.deleteOne({ city: 'Oslo' });
checkEq(d1.deletedCount, 1, 'deleteOne deletedCount');
const dm = c.deleteMany({ city: 'Oslo' });
checkEq(dm.deletedCount, 3, 'deleteMany deletedCount');
checkEq(ids(c.find().sort({ _id: 1 })), [4, 9], 'documents left');

// drop
checkEq(c.drop(), true, 'drop returns true');
check(!d.getCollectionNames().includes('items'), 'dropped collection is gone');
checkEq(c.countDocuments({}), 0, 'dropped collection is empty');

print('OK');
