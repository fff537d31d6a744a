// Query operators through the real server with mongosh: comparison ($eq $ne $gt $gte $lt
// $lte $in $nin, with null and arrays), logical ($and $or $nor $not), $exists, $type, $regex,
// $mod, $expr, $all, $elemMatch, $size, $bits*, $comment, dotted paths through arrays, null vs
// missing; projection ($slice, $elemMatch, positional $, inclusion/exclusion); sort across
// BSON types; explain() of an indexed query (IXSCAN); $where and $text without a text index answer an error.
// Small fixed data; each check compares the exact list of _id values.
// Run: mongosh "mongodb://127.0.0.1:PORT/test?directConnection=true" --quiet --file operators.js
load(require('path').join(__dirname, '_lib.js'));

const d = scriptDb('mongosh_operators');
const c = d.ops;
c.drop();

c.insertMany([
  { _id: 1, n: 5, s: 'apple', tags: ['red', 'green'], arr: [1, 5, 9], sub: { x: 1, y: [{ z: 1 }, { z: 2 }] }, bits: 5 },
  { _id: 2, n: 10, s: 'Banana', tags: ['yellow'], arr: [2, 4], sub: { x: 2, y: [{ z: 3 }] }, bits: 10 },
  { _id: 3, n: 15.5, s: 'cherry\nberry', tags: [], arr: [], sub: { x: null }, bits: 15 },
  { _id: 4, n: null, s: 'date', tags: ['red'], arr: [[1, 2], 3] },
  { _id: 5, s: 'elder', tags: ['green', 'red', 'blue'], arr: [7], sub: { y: [{ z: 2 }, { z: 5 }] } },
  { _id: 6, n: NumberLong('20'), s: 'fig', tags: 'red', arr: [10, 20, 30], sub: { x: 3 }, bits: 0 },
  { _id: 7, n: '10', s: 'grape', tags: null, arr: [null], bits: NumberInt(255) },
  { _id: 8, n: [3, 12], s: 'APPLE pie', arr: [1, 1] },
]);

const ids = (filter, message, projection) => c.find(filter, projection).sort({ _id: 1 }).toArray().map((doc) => doc._id);
const checkIds = (filter, expected, message) => checkEq(ids(filter), expected, message);

// comparison
checkIds({ n: 10 }, [2], 'implicit $eq (numbers only, not the string)');
checkIds({ n: { $eq: 10 } }, [2], '$eq');
checkIds({ n: { $eq: '10' } }, [7], '$eq string');
checkIds({ n: { $ne: 10 } }, [1, 3, 4, 5, 6, 7, 8], '$ne includes missing and other types');
checkIds({ n: { $gt: 10 } }, [3, 6, 8], '$gt (numeric, array element 12)');
checkIds({ n: { $gte: 10 } }, [2, 3, 6, 8], '$gte');
checkIds({ n: { $lt: 10 } }, [1, 8], '$lt (array element 3)');
checkIds({ n: { $lte: 10 } }, [1, 2, 8], '$lte');
checkIds({ n: { $gt: 4, $lt: 6 } }, [1, 8], 'range on one field (array elements may satisfy each bound separately)');
checkIds({ bits: { $gt: 5, $lt: 10 } }, [], 'empty range');
checkIds({ n: { $gt: 'a' } }, [], '$gt string bound does not cross types');
checkIds({ n: { $gte: '1' } }, [7], '$gte string compares strings only');
checkIds({ n: { $in: [5, 20, '10'] } }, [1, 6, 7], '$in mixed types');
checkIds({ n: { $in: [null] } }, [4, 5], '$in null matches null and missing');
checkIds({ n: { $nin: [5, 10, null] } }, [3, 6, 7, 8], '$nin with null excludes missing');
checkIds({ n: { $in: [3] } }, [8], '$in matches an array element');
checkIds({ n: [3, 12] }, [8], 'equality with a whole array');
checkIds({ n: [12, 3] }, [], 'whole-array equality is ordered');
checkIds({ arr: [1, 2] }, [4], 'equality with a nested array element');
checkIds({ arr: { $in: [[1, 2], 20] } }, [4, 6], '$in with an array value');
checkIds({ tags: 'red' }, [1, 4, 5, 6], 'scalar matches array element or scalar');
checkIds({ tags: null }, [7, 8], 'null matches null and missing');
checkIds({ tags: { $ne: null } }, [1, 2, 3, 4, 5, 6], '$ne null');
checkIds({ tags: [] }, [3], 'empty array equality');
checkIds({ arr: null }, [7], 'null matches an array holding null');

// logical
checkIds({ $and: [{ n: { $gt: 1 } }, { n: { $lt: 11 } }] }, [1, 2, 8], '$and');
checkIds({ $or: [{ n: 5 }, { s: 'fig' }] }, [1, 6], '$or');
checkIds({ $nor: [{ n: 5 }, { n: null }] }, [2, 3, 6, 7, 8], '$nor');
checkIds({ n: { $not: { $gt: 6 } } }, [1, 4, 5, 7], '$not (missing and non-numbers match)');
checkIds({ s: { $not: /^a/i } }, [2, 3, 4, 5, 6, 7], '$not with a regex');
checkIds({ $and: [{ $or: [{ n: 5 }, { n: 10 }] }, { $or: [{ s: 'apple' }, { s: 'fig' }] }] }, [1], 'nested $and/$or');
checkThrows(() => c.find({ $and: [] }).toArray(), '$and with an empty array');
checkThrows(() => c.find({ n: { $not: 5 } }).toArray(), '$not with a plain value');

// $exists
checkIds({ n: { $exists: true } }, [1, 2, 3, 4, 6, 7, 8], '$exists true (null counts)');
checkIds({ n: { $exists: false } }, [5], '$exists false');
checkIds({ 'sub.x': { $exists: true } }, [1, 2, 3, 6], '$exists on a dotted path');
checkIds({ bits: { $exists: 0 } }, [4, 5, 8], '$exists 0');

// $type
checkIds({ n: { $type: 'string' } }, [7], '$type string');
checkIds({ n: { $type: 2 } }, [7], '$type 2');
checkIds({ n: { $type: 'double' } }, [3], '$type double');
checkIds({ n: { $type: 'long' } }, [6], '$type long');
checkIds({ n: { $type: 'number' } }, [1, 2, 3, 6, 8], '$type number (array elements too)');
checkIds({ n: { $type: 'null' } }, [4], '$type null (not missing)');
checkIds({ n: { $type: 10 } }, [4], '$type 10');
checkIds({ n: { $type: 'array' } }, [8], '$type array');
checkIds({ n: { $type: ['string', 'null'] } }, [4, 7], '$type list');
checkIds({ bits: { $type: 'int' } }, [1, 2, 3, 6, 7], '$type int (mongosh sends small integers as Int32)');
checkIds({ sub: { $type: 'object' } }, [1, 2, 3, 5, 6], '$type object');

// $regex
checkIds({ s: /^apple/ }, [1], 'regex literal');
checkIds({ s: { $regex: '^apple' } }, [1], '$regex string');
checkIds({ s: { $regex: '^apple', $options: 'i' } }, [1, 8], '$regex option i');
checkIds({ s: /^APPLE/i }, [1, 8], 'regex literal flag i');
checkIds({ s: /^berry/ }, [], 'no m: ^ at string start only');
checkIds({ s: /^berry/m }, [3], 'option m: ^ after a newline');
checkIds({ s: { $regex: 'cherry.berry' } }, [], 'no s: dot does not match newline');
checkIds({ s: { $regex: 'cherry.berry', $options: 's' } }, [3], 'option s: dot matches newline');
checkIds({ s: { $regex: ' a p p l e # comment', $options: 'x' } }, [1], 'option x: whitespace and comments ignored');
checkIds({ s: { $in: [/^b/i, 'fig'] } }, [2, 6], 'regex inside $in');
checkIds({ s: { $nin: [/e$/, /^a/i] } }, [2, 3, 5, 6], '$nin with regexes');
checkIds({ tags: /^gr/ }, [1, 5], 'regex over array elements');
checkIds({ s: { $regex: /pie$/, $options: 'i' } }, [8], '$regex with a regex value and $options');

// $mod
checkIds({ n: { $mod: [5, 0] } }, [1, 2, 3, 6], '$mod (15.5 truncates to 15; arrays of non-multiples do not match)');
checkIds({ bits: { $mod: [4, 3] } }, [3, 7], '$mod remainder 3');
checkThrows(() => c.find({ n: { $mod: [0, 1] } }).toArray(), '$mod by zero');
checkThrows(() => c.find({ n: { $mod: [5] } }).toArray(), '$mod with one element');

// $expr
checkIds({ $expr: { $gte: ['$bits', '$n'] }, n: { $type: 'number' }, bits: { $exists: true } }, [1, 2], '$expr comparing two fields');
checkIds({ $expr: { $gt: ['$bits', 9] } }, [2, 3, 7], '$expr field vs constant');
checkIds({ $expr: { $eq: ['$sub.x', 2] } }, [2], '$expr dotted');
checkIds({ $expr: { $lt: [{ $size: { $ifNull: ['$arr', []] } }, 2] } }, [3, 5, 7], '$expr with $size');

// $all
checkIds({ tags: { $all: ['red', 'green'] } }, [1, 5], '$all');
checkIds({ tags: { $all: ['red'] } }, [1, 4, 5, 6], '$all one value (scalar field too)');
checkIds({ tags: { $all: [] } }, [], '$all empty matches nothing');
checkIds({ 'sub.y': { $all: [{ $elemMatch: { z: 2 } }, { $elemMatch: { z: { $gt: 4 } } }] } }, [5], '$all with $elemMatch');

// $elemMatch
checkIds({ arr: { $elemMatch: { $gt: 4, $lt: 6 } } }, [1], '$elemMatch on values');
checkIds({ arr: { $gt: 8, $lt: 2 } }, [1], 'no $elemMatch: conditions may match different elements');
checkIds({ arr: { $elemMatch: { $gt: 8, $lt: 2 } } }, [], '$elemMatch: one element must match all');
checkIds({ 'sub.y': { $elemMatch: { z: { $gte: 2 }, $or: [{ z: 2 }, { z: 3 }] } } }, [1, 2, 5], '$elemMatch on documents');
checkIds({ 'sub.y': { $elemMatch: { z: 1 } } }, [1], '$elemMatch one field');
checkIds({ n: { $elemMatch: { $gt: 11 } } }, [8], '$elemMatch only arrays');

// $size
checkIds({ arr: { $size: 2 } }, [2, 4, 8], '$size 2');
checkIds({ arr: { $size: 0 } }, [3], '$size 0');
checkIds({ tags: { $size: 1 } }, [2, 4], '$size does not match scalars');

// $bits*
checkIds({ bits: { $bitsAllSet: 5 } }, [1, 3, 7], '$bitsAllSet mask');
checkIds({ bits: { $bitsAllSet: [1, 3] } }, [2, 3, 7], '$bitsAllSet positions');
checkIds({ bits: { $bitsAnySet: [0] } }, [1, 3, 7], '$bitsAnySet');
checkIds({ bits: { $bitsAllClear: 5 } }, [2, 6], '$bitsAllClear');
checkIds({ bits: { $bitsAnyClear: [0, 1] } }, [1, 2, 6], '$bitsAnyClear');

// $comment
checkIds({ n: 5, $comment: 'a note' }, [1], '$comment is ignored');
checkEq(c.find({ n: 5 }).comment('via cursor').toArray().map((x) => x._id), [1], 'cursor.comment');

// dotted paths through arrays
checkIds({ 'sub.y.z': 2 }, [1, 5], 'dotted through an array of documents');
checkIds({ 'sub.y.z': { $gt: 2 } }, [2, 5], 'dotted range through an array');
checkIds({ 'sub.y.0.z': 2 }, [5], 'numeric index in a path');
checkIds({ 'arr.0': 1 }, [1, 4, 8], 'array index (arr.0 = [1, 2] holds 1)');
checkIds({ 'arr.0.1': 2 }, [4], 'index into a nested array');
checkIds({ 'sub.x': null }, [3, 4, 5, 7, 8], 'dotted null: null or missing');
checkIds({ 'sub.y.z': null }, [3, 4, 6, 7, 8], 'dotted null through arrays');
checkIds({ 'sub.x': { $exists: false } }, [4, 5, 7, 8], 'dotted $exists false');

// null vs missing
checkIds({ n: null }, [4, 5], 'null: null or missing');
checkIds({ n: { $eq: null } }, [4, 5], '$eq null');
checkIds({ n: { $type: 'null' } }, [4], 'only null');
checkIds({ n: { $gte: null } }, [4, 5], '$gte null');
checkIds({ n: { $gt: null } }, [], '$gt null');

// projection
const one = (id, projection) => c.findOne({ _id: id }, projection);
checkEq(one(1, { s: 1 }), { _id: 1, s: 'apple' }, 'inclusion keeps _id');
checkEq(one(1, { s: 1, _id: 0 }), { s: 'apple' }, 'inclusion without _id');
checkEq(one(2, { tags: 0, arr: 0, sub: 0, bits: 0 }), { _id: 2, n: 10, s: 'Banana' }, 'exclusion');
checkEq(one(1, { 'sub.x': 1, _id: 0 }), { sub: { x: 1 } }, 'dotted inclusion');
checkEq(one(1, { 'sub.y.z': 1, _id: 0 }), { sub: { y: [{ z: 1 }, { z: 2 }] } }, 'dotted inclusion through an array');
checkEq(one(1, { sub: 0, tags: 0, arr: 0, bits: 0, n: 0 }), { _id: 1, s: 'apple' }, 'exclusion of several');
checkEq(one(6, { arr: { $slice: 2 }, _id: 0, s: 1 }), { s: 'fig', arr: [10, 20] }, '$slice n');
checkEq(one(6, { arr: { $slice: -1 }, _id: 0, s: 1 }), { s: 'fig', arr: [30] }, '$slice -n');
checkEq(one(6, { arr: { $slice: [1, 1] }, _id: 0, s: 1 }), { s: 'fig', arr: [20] }, '$slice [skip, n]');
checkEq(one(2, { arr: { $slice: 1 } }), { _id: 2, n: 10, s: 'Banana', tags: ['yellow'], arr: [2], sub: { x: 2, y: [{ z: 3 }] }, bits: 10 }, '$slice alone keeps other fields');
checkThrows(() => one(5, { 'sub.y': { $elemMatch: { z: { $gt: 3 } } } }), '$elemMatch projection on a nested field');
checkEq(one(1, { arr: { $elemMatch: { $gt: 4 } }, _id: 0 }), { arr: [5] }, '$elemMatch projection: first match');
checkEq(one(2, { arr: { $elemMatch: { $gt: 40 } }, _id: 0 }), {}, '$elemMatch projection without a match');
checkEq(c.find({ arr: { $gt: 4 }, _id: 1 }, { 'arr.$': 1, _id: 0 }).toArray(), [{ arr: [5] }], 'positional $');
checkEq(c.find({ tags: 'green', _id: 5 }, { 'tags.$': 1 }).toArray(), [{ _id: 5, tags: ['green'] }], 'positional $ first element');
checkThrows(() => c.find({}, { s: 1, n: 0 }).toArray(), 'mixed inclusion and exclusion');

// sort across types: null/missing < numbers < strings < objects < arrays (ascending uses the
// smallest array element)
const t = d.sorted;
t.drop();
t.insertMany([
  { _id: 1, v: 'b' },
  { _id: 2, v: 3 },
  { _id: 3, v: null },
  { _id: 4 },
  { _id: 5, v: { a: 1 } },
  { _id: 6, v: [2, 'z'] },
  { _id: 7, v: true },
  { _id: 8, v: 1.5 },
  { _id: 9, v: 'a' },
  { _id: 10, v: ISODate('2020-01-01T00:00:00Z') },
  { _id: 11, v: ObjectId('000000000000000000000001') },
]);
const sortedIds = (sort) => t.find().sort(sort).toArray().map((x) => x._id);
checkEq(sortedIds({ v: 1, _id: 1 }), [3, 4, 8, 6, 2, 9, 1, 5, 11, 7, 10], 'sort ascending across types');
checkEq(sortedIds({ v: -1, _id: 1 }), [10, 7, 11, 5, 6, 1, 9, 2, 8, 3, 4], 'sort descending across types');

// explain() of an indexed query
c.createIndex({ s: 1 });
const explained = c.find({ s: 'fig' }).explain();
const plan = explained.queryPlanner.winningPlan;
print('explain winningPlan: ' + EJSON.stringify(plan, { relaxed: true }));
const ixscan = plan.stage === 'IXSCAN' ? plan : plan.inputStage;
check(ixscan && ixscan.stage === 'IXSCAN', 'indexed query plans an IXSCAN');
checkEq(ixscan.indexName, 's_1', 'explain indexName');
checkIds({ s: 'fig' }, [6], 'indexed equality still answers');
checkIds({ s: { $gte: 'd', $lt: 'f' } }, [4, 5], 'indexed range');
const collscan = c.find({ n: 5 }).explain().queryPlanner.winningPlan;
checkEq(collscan.stage, 'COLLSCAN', 'unindexed query plans a COLLSCAN');

// unsupported operators answer an error
checkThrows(() => c.find({ $where: 'this.n > 1' }).toArray(), '$where');
checkThrows(() => c.find({ $text: { $search: 'apple' } }).toArray(), '$text without a text index');
checkThrows(() => c.find({ n: { $foo: 1 } }).toArray(), 'unknown operator');

d.dropDatabase();
print('OK');
