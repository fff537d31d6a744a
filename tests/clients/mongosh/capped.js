// Capped collections and tailable cursors with mongosh, as MongoDB 7.0's manual shows them:
// createCollection with capped/size/max (size rounded up to 256, listed back as set),
// the oldest documents make room, natural order and its reverse, isCapped(), stats(),
// 72 without size, a tailable cursor that returns what was inserted after it reached the
// end, 2 BadValue for a tailable cursor on a plain collection, convertToCapped().
// Run: mongosh "mongodb://127.0.0.1:PORT/test?directConnection=true" --quiet --file capped.js
load(require('path').join(__dirname, '_lib.js'));

const d = scriptDb('mongosh_capped');
checkNum(d.createCollection('log', { capped: true, size: 1000, max: 3 }).ok, 1, 'createCollection');
const info = d.getCollectionInfos({ name: 'log' })[0];
checkEq(info.options, { capped: true, size: 1024, max: 3 }, 'options listed back, size rounded');
check(d.log.isCapped(), 'isCapped()');

for (let i = 0; i < 5; i++) d.log.insertOne({ _id: 10 - i, i });
checkEq(d.log.find().toArray().map((x) => x.i), [2, 3, 4], 'max 3 keeps the newest, in insertion order');
checkEq(d.log.find().sort({ $natural: -1 }).toArray().map((x) => x.i), [4, 3, 2], '$natural: -1');
const stats = d.log.stats();
check(stats.capped === true, 'stats().capped: ' + show(stats.capped));
checkNum(stats.max, 3, 'stats().max');

const noSize = checkThrows(() => d.createCollection('bad', { capped: true }), 'capped without size');
checkNum(noSize.code, 72, 'InvalidOptions');

// A tailable cursor stays open at the end and returns what is inserted later.
let reply = d.runCommand({ find: 'log', tailable: true, awaitData: true });
checkEq(reply.cursor.firstBatch.map((x) => x.i), [2, 3, 4], 'first batch');
const id = reply.cursor.id;
check(!isZeroId(id), 'the cursor stays open');
d.log.insertOne({ _id: 100, i: 5 });
reply = d.runCommand({ getMore: asLong(id), collection: 'log', maxTimeMS: 5000 });
checkEq(reply.cursor.nextBatch.map((x) => x.i), [5], 'getMore returns the new document');
reply = d.runCommand({ getMore: asLong(id), collection: 'log', maxTimeMS: 100 });
checkEq(reply.cursor.nextBatch, [], 'nothing new after maxTimeMS');
check(!isZeroId(reply.cursor.id), 'still open');
d.runCommand({ killCursors: 'log', cursors: [asLong(id)] });

d.plain.insertMany([{ a: 1 }, { a: 2 }]);
const notCapped = checkThrows(() => d.runCommand({ find: 'plain', tailable: true }), 'tailable on a plain collection');
checkNum(notCapped.code, 2, 'BadValue');

checkNum(d.plain.convertToCapped(4096).ok, 1, 'convertToCapped');
check(d.plain.isCapped(), 'converted');
checkEq(d.plain.find({}, { _id: 0 }).toArray(), [{ a: 1 }, { a: 2 }], 'documents kept');

print('OK');
