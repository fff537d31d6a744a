// Text search through the real server with mongosh, on the `articles` examples of MongoDB's
// manual ("$text"): a text index, terms ORed and stemmed, a phrase, a negation,
// $caseSensitive, $diacriticSensitive, {$meta: "textScore"} in a projection and a sort,
// getIndexes() showing the text index as MongoDB does, explain() naming it, and the errors
// for $text without a text index (27) and a second text index (85).
// Run: mongosh "mongodb://127.0.0.1:PORT/test?directConnection=true" --quiet --file text_search.js
load(require('path').join(__dirname, '_lib.js'));

const d = scriptDb('mongosh_text');
const c = d.articles;
c.drop();
c.createIndex({ subject: 'text' });
c.insertMany([
  { _id: 1, subject: 'coffee', author: 'xyz', views: 50 },
  { _id: 2, subject: 'Coffee Shopping', author: 'efg', views: 5 },
  { _id: 3, subject: 'Baking a cake', author: 'abc', views: 90 },
  { _id: 4, subject: 'baking', author: 'xyz', views: 100 },
  { _id: 5, subject: 'Café Con Leche', author: 'abc', views: 200 },
  { _id: 6, subject: 'Сырники', author: 'jkl', views: 80 },
  { _id: 7, subject: 'coffee and cream', author: 'efg', views: 10 },
  { _id: 8, subject: 'Cafe con Leche', author: 'xyz', views: 10 },
]);

const ids = (text) => c.find({ $text: text }).toArray().map((doc) => doc._id).sort();
checkEq(ids({ $search: 'coffee' }), [1, 2, 7], 'a term');
checkEq(ids({ $search: 'bake coffee cake' }), [1, 2, 3, 4, 7], 'terms are ORed and stemmed');
checkEq(ids({ $search: '"coffee shop"' }), [2], 'a phrase');
checkEq(ids({ $search: 'coffee -shop' }), [1, 7], 'a negation');
checkEq(ids({ $search: 'Coffee', $caseSensitive: true }), [2], '$caseSensitive');
checkEq(ids({ $search: 'CAFÉ', $diacriticSensitive: true }), [5], '$diacriticSensitive');

const scored = c.find({ $text: { $search: 'cake' } }, { score: { $meta: 'textScore' } }).toArray();
checkEq(scored.length, 1, 'one cake');
check(Math.abs(scored[0].score - 0.75) < 1e-9, 'the manual scores "Baking a cake" 0.75: ' + scored[0].score);
const ranked = c.find({ $text: { $search: 'coffee cake' } }, { score: { $meta: 'textScore' } })
  .sort({ score: { $meta: 'textScore' } }).toArray().map((doc) => doc.score);
checkEq(ranked, ranked.slice().sort((a, b) => b - a), 'sorted by score, highest first');

const index = c.getIndexes().find((i) => i.name === 'subject_text');
checkEq(index.key, { _fts: 'text', _ftsx: 1 }, 'the text index key');
checkEq(index.weights, { subject: 1 }, 'weights');
checkEq(index.default_language, 'english', 'default_language');
checkEq(index.textIndexVersion, 3, 'textIndexVersion');
const plan = c.find({ $text: { $search: 'coffee' } }).explain();
check(JSON.stringify(plan.queryPlanner.winningPlan).includes('subject_text'), 'explain names the text index');

d.other.insertOne({ _id: 1, a: 'x' });
let err = checkThrows(() => d.other.find({ $text: { $search: 'x' } }).toArray(), '$text without a text index');
checkEq(err.code, 27, 'IndexNotFound');
err = checkThrows(() => c.createIndex({ author: 'text' }), 'a second text index');
checkEq(err.code, 85, 'IndexOptionsConflict');

d.dropDatabase();
print('OK');
