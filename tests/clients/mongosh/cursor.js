// Cursors with mongosh: a batchSize(5) cursor over 50 documents returns every
// document in order, in batches of at most 5 (checked with the raw commands too).
// Run: mongosh "mongodb://127.0.0.1:PORT/test?directConnection=true" --quiet --file cursor.js
load(require('path').join(__dirname, '_lib.js'));

const d = scriptDb('mongosh_cursor');
const c = d.batches;
const docs = [];
for (let i = 0; i < 50; i++) docs.push({ _id: i, label: 'doc ' + i });
c.insertMany(docs);

// The shell's cursor.
const cursor = c.find().sort({ _id: 1 }).batchSize(5);
const seen = [];
while (cursor.hasNext()) seen.push(cursor.next()._id);
checkEq(seen, docs.map((doc) => doc._id), 'every document, in order');
check(cursor.isExhausted(), 'cursor exhausted');

checkEq(c.find().sort({ _id: -1 }).batchSize(5).toArray().length, 50, 'toArray over batches');
checkEq(c.find().sort({ _id: 1 }).batchSize(5).limit(12).toArray().map((x) => x._id).slice(-1), [11], 'limit over batches');

// The same through the raw commands: find + getMore until the cursor id is 0.
let reply = d.runCommand({ find: 'batches', sort: { _id: 1 }, batchSize: 5 });
checkNum(reply.ok, 1, 'find ok');
const batches = [reply.cursor.firstBatch];
let id = reply.cursor.id;
check(!isZeroId(id), 'find leaves a cursor open');
while (!isZeroId(id)) {
  reply = d.runCommand({ getMore: asLong(id), collection: 'batches', batchSize: 5 });
  checkNum(reply.ok, 1, 'getMore ok');
  batches.push(reply.cursor.nextBatch);
  id = reply.cursor.id;
  check(batches.length <= 20, 'cursor ends');
}
check(batches.every((b) => b.length <= 5), 'batches of at most 5: ' + batches.map((b) => b.length));
checkEq(batches.flat().map((x) => x._id), docs.map((doc) => doc._id), 'raw batches, in order');
check(batches.length >= 10, 'at least 10 batches, got ' + batches.length);

print('OK');
