// Mongoose with a text index in a schema, run with `node --test`: Model.init() builds every
// schema index through createIndexes (a text index used to make an app fail at start), then
// a $text search with a textScore sort works.
//
// The server must already be running; tests/run_all.sh passes its address in DOCGATE_URI.

import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import mongoose from 'mongoose';

const uri = process.env.DOCGATE_URI;
if (!uri) {
  console.error('DOCGATE_URI is not set (tests/run_all.sh sets it)');
  process.exit(2);
}

let connection;

before(async () => {
  connection = await mongoose.createConnection(uri, { dbName: 'mongoose_text', serverSelectionTimeoutMS: 10000 }).asPromise();
  await connection.dropDatabase();
});

after(async () => {
  await connection?.close();
});

test('a schema with a text index: Model.init() succeeds and a search works', async () => {
  const postSchema = new mongoose.Schema({ title: String, body: String });
  postSchema.index({ title: 'text', body: 'text' }, { weights: { title: 5 } });
  const Post = connection.model('Post', postSchema);
  await Post.init();
  const indexes = await Post.listIndexes();
  const text = indexes.find((i) => i.key._fts === 'text');
  assert.deepEqual(text.weights, { body: 1, title: 5 });
  await Post.create([
    { title: 'Brewing coffee', body: 'water and beans' },
    { title: 'Tea time', body: 'a cup of coffee, maybe' },
    { title: 'Bread', body: 'flour' },
  ]);
  const found = await Post.find({ $text: { $search: 'coffee' } }, { score: { $meta: 'textScore' } })
    .sort({ score: { $meta: 'textScore' } })
    .lean();
  assert.deepEqual(found.map((p) => p.title), ['Brewing coffee', 'Tea time']);
  assert.ok(found[0].score > found[1].score);
  assert.equal(await Post.countDocuments({ $text: { $search: 'flour' } }), 1);
});
