// Views and collMod with mongosh: db.createView, reads through the view (find, countDocuments,
// distinct, aggregate), db.getCollectionInfos, getCollectionNames, writes refused with 166,
// db.runCommand({collMod}) redefining the view and hiding an index, and the shell's own
// collection.hideIndex()/unhideIndex() helpers (which send collMod).
// (`show collections` is checked with --eval by tests/run_all.sh.)
// Run: mongosh "mongodb://127.0.0.1:PORT/test?directConnection=true" --quiet --file views.js
load(require('path').join(__dirname, '_lib.js'));

function checkThrowsCode(fn, code, message) {
  const err = checkThrows(fn, message);
  checkNum(err.code, code, message + ' (' + err.message + ')');
}

const d = scriptDb('mongosh_views');
d.dropDatabase();
d.books.insertMany([
  { _id: 1, title: 'A', year: 1990, genre: 'sf' },
  { _id: 2, title: 'B', year: 2005, genre: 'crime' },
  { _id: 3, title: 'C', year: 2010, genre: 'sf' },
  { _id: 4, title: 'D', year: 2020, genre: 'sf' },
]);
d.books.createIndex({ year: 1 });

const created = d.createView('recent_sf', 'books', [
  { $match: { genre: 'sf', year: { $gte: 2000 } } },
  { $project: { genre: 0 } },
]);
checkNum(created.ok, 1, 'createView ok');

checkEq(d.recent_sf.find().sort({ _id: 1 }).toArray(), [
  { _id: 3, title: 'C', year: 2010 },
  { _id: 4, title: 'D', year: 2020 },
], 'find on the view');
checkEq(d.recent_sf.find({ year: { $gt: 2015 } }, { title: 1, _id: 0 }).toArray(), [{ title: 'D' }], 'find with filter and projection');
checkNum(d.recent_sf.countDocuments(), 2, 'countDocuments');
checkNum(d.recent_sf.estimatedDocumentCount(), 2, 'estimatedDocumentCount');
checkEq(d.recent_sf.distinct('title'), ['C', 'D'], 'distinct');
checkEq(d.recent_sf.aggregate([{ $group: { _id: null, n: { $sum: 1 } } }]).toArray(), [{ _id: null, n: 2 }], 'aggregate');

const infos = d.getCollectionInfos({ name: 'recent_sf' });
checkEq(infos.length, 1, 'getCollectionInfos finds the view');
checkEq(infos[0].type, 'view', 'type');
checkEq(infos[0].options.viewOn, 'books', 'options.viewOn');
checkEq(infos[0].info.readOnly, true, 'info.readOnly');
checkEq(d.getCollectionNames().sort(), ['books', 'recent_sf'], 'getCollectionNames');

checkThrowsCode(() => d.recent_sf.insertOne({ title: 'E' }), 166, 'insertOne on a view');
checkThrowsCode(() => d.recent_sf.updateOne({}, { $set: { x: 1 } }), 166, 'updateOne on a view');
checkThrowsCode(() => d.recent_sf.deleteMany({}), 166, 'deleteMany on a view');
checkThrowsCode(() => d.recent_sf.createIndex({ title: 1 }), 166, 'createIndex on a view');

// collMod redefines the view.
const redefined = d.runCommand({ collMod: 'recent_sf', pipeline: [{ $match: { genre: 'crime' } }] });
checkNum(redefined.ok, 1, 'collMod of the view ok');
checkEq(d.recent_sf.find().toArray().map((b) => b._id), [2], 'the view reads the new pipeline');

// A cycle is refused.
checkThrowsCode(() => d.runCommand({ collMod: 'recent_sf', viewOn: 'recent_sf', pipeline: [] }), 160, 'a cycle is refused');

// collMod hides an index; the shell's helpers do the same.
const hidden = d.runCommand({ collMod: 'books', index: { keyPattern: { year: 1 }, hidden: true } });
checkNum(hidden.ok, 1, 'collMod hidden ok');
checkEq(hidden.hidden_new, true, 'hidden_new');
checkEq(d.books.getIndexes().find((i) => i.name === 'year_1').hidden, true, 'getIndexes shows hidden');
d.books.unhideIndex('year_1');
checkEq(d.books.getIndexes().find((i) => i.name === 'year_1').hidden, undefined, 'unhideIndex');
d.books.hideIndex({ year: 1 });
checkEq(d.books.getIndexes().find((i) => i.name === 'year_1').hidden, true, 'hideIndex');

check(d.recent_sf.drop(), 'drop the view');
checkEq(d.getCollectionNames(), ['books'], 'the view is gone, the collection stays');
checkNum(d.books.countDocuments(), 4, 'the collection is whole');
print('OK');
