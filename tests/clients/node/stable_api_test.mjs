// The Stable API through the MongoDB Node.js driver (7.x), run with `node --test`: a client
// declared with `serverApi: {version: '1', strict: true}` runs CRUD, transactions and
// estimatedDocumentCount, and is refused (323 APIStrictError) commands outside API V1
// (`distinct`), options of V1 commands outside it (a tailable `find`, `createIndexes` with
// `sparse` or a text key, a capped `create`) and stages outside it
// (`$indexStats`, `$currentOp`, `$listLocalSessions`, `$collStats` with more than `count`),
// also inside `$lookup`/`$facet`, and expression operators outside it (`$bitAnd`, … before
// MongoDB 7.1, `$filter`'s `limit`) in a stage, an accumulator, a window function, `$expr` and
// an update pipeline. The same requests from a non-strict V1 client pass.
//
// The server must already be running: tests/run_all.sh starts a fresh docgate and passes its
// address in DOCGATE_URI, e.g.
//   DOCGATE_URI='mongodb://127.0.0.1:PORT/?directConnection=true' node --test stable_api_test.mjs

import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { MongoClient } from 'mongodb';

const uri = process.env.DOCGATE_URI;
if (!uri) {
  console.error('DOCGATE_URI is not set (tests/run_all.sh sets it)');
  process.exit(2);
}
const OPTS = { serverSelectionTimeoutMS: 10000, socketTimeoutMS: 15000 };

async function rejectsWithStrictError(promise, what) {
  await assert.rejects(promise, (err) => {
    assert.equal(err.code, 323, `${what}: ${err.message}`);
    assert.equal(err.codeName, 'APIStrictError', `${what}: ${err.message}`);
    return true;
  });
}

describe('Stable API V1 with the Node.js driver', () => {
  let strict;
  let lenient;
  let coll;

  before(async () => {
    strict = new MongoClient(uri, { ...OPTS, serverApi: { version: '1', strict: true } });
    lenient = new MongoClient(uri, { ...OPTS, serverApi: { version: '1' } });
    await strict.connect();
    await lenient.connect();
    coll = strict.db('stable_api').collection('items');
    await coll.drop().catch(() => {});
    await coll.insertMany([{ _id: 1, a: 'x' }, { _id: 2, a: 'y' }]);
  });

  after(async () => {
    await strict?.close();
    await lenient?.close();
  });

  test('CRUD, counts and transactions are V1', async () => {
    assert.deepEqual(await coll.find({}, { sort: { _id: 1 } }).toArray(), [
      { _id: 1, a: 'x' },
      { _id: 2, a: 'y' },
    ]);
    assert.equal(await coll.countDocuments({}), 2);
    assert.equal(await coll.estimatedDocumentCount(), 2);
    await coll.createIndex({ a: 1 }, { unique: true });
    const session = strict.startSession();
    try {
      await session.withTransaction(async () => {
        await coll.insertOne({ _id: 3, a: 'z' }, { session });
      });
    } finally {
      await session.endSession();
    }
    assert.equal(await coll.countDocuments({}), 3);
  });

  test('commands, options and stages outside V1 answer 323', async () => {
    const db = strict.db('stable_api');
    await rejectsWithStrictError(coll.distinct('a'), 'distinct');
    await rejectsWithStrictError(coll.find({}, { tailable: true }).toArray(), 'tailable find');
    await rejectsWithStrictError(coll.find({}, { showRecordId: true }).toArray(), 'showRecordId');
    await rejectsWithStrictError(coll.find({}, { noCursorTimeout: true }).toArray(), 'noCursorTimeout');
    await rejectsWithStrictError(coll.createIndex({ b: 1 }, { sparse: true }), 'sparse index');
    await rejectsWithStrictError(coll.createIndex({ b: 'text' }), 'text index');
    await rejectsWithStrictError(db.createCollection('capped', { capped: true, size: 4096 }), 'capped create');
    for (const pipeline of [
      [{ $indexStats: {} }],
      [{ $collStats: { storageStats: {} } }],
      [{ $lookup: { from: 'other', pipeline: [{ $indexStats: {} }], as: 'x' } }],
      [{ $facet: { a: [], b: [{ $indexStats: {} }] } }],
    ]) {
      await rejectsWithStrictError(coll.aggregate(pipeline).toArray(), JSON.stringify(pipeline));
    }
    const admin = strict.db('admin');
    await rejectsWithStrictError(admin.aggregate([{ $currentOp: {} }]).toArray(), '$currentOp');
    await rejectsWithStrictError(admin.aggregate([{ $listLocalSessions: {} }]).toArray(), '$listLocalSessions');
  });

  test('expression operators outside V1 answer 323 wherever expressions are parsed', async () => {
    const bits = strict.db('stable_api').collection('bits');
    await bits.drop().catch(() => {});
    await bits.insertMany([{ _id: 1, n: 5, l: [1, 2, 3] }, { _id: 2, n: 6, l: [4] }]);
    const message = (op) => `${op} is not allowed with 'apiStrict: true' in API Version 1`;
    const refused = async (promise, text, what) => {
      await assert.rejects(promise, (err) => {
        assert.equal(err.code, 323, `${what}: ${err.message}`);
        assert.equal(err.codeName, 'APIStrictError', `${what}: ${err.message}`);
        assert.equal(err.message, text, what);
        return true;
      });
    };
    const loose = lenient.db('stable_api').collection('bits');
    // [strict request, the same from a non-strict V1 client, its result, MongoDB's message]
    const cases = [
      [
        (c) => c.aggregate([{ $project: { x: { $bitAnd: ['$n', 3] } } }, { $sort: { _id: 1 } }]).toArray(),
        [{ _id: 1, x: 1 }, { _id: 2, x: 2 }],
        message('$bitAnd'),
        'stage expression',
      ],
      [
        (c) => c.aggregate([{ $group: { _id: null, s: { $sum: { $bitOr: ['$n', 1] } } } }]).toArray(),
        [{ _id: null, s: 12 }],
        message('$bitOr'),
        '$group accumulator',
      ],
      [
        (c) => c.aggregate([
          { $setWindowFields: { sortBy: { _id: 1 }, output: { s: { $sum: { $bitXor: ['$n', 1] }, window: { documents: ['unbounded', 'current'] } } } } },
          { $project: { s: 1 } },
        ]).toArray(),
        [{ _id: 1, s: 4 }, { _id: 2, s: 11 }],
        message('$bitXor'),
        'window function',
      ],
      [
        (c) => c.find({ $expr: { $eq: [{ $bitNot: '$n' }, -6] } }).toArray(),
        [{ _id: 1, n: 5, l: [1, 2, 3] }],
        message('$bitNot'),
        'find $expr',
      ],
      [
        (c) => c.countDocuments({ $expr: { $eq: [{ $bitAnd: ['$n', 4] }, 4] } }),
        2,
        message('$bitAnd'),
        'countDocuments $expr',
      ],
      [
        (c) => c.aggregate([{ $project: { f: { $filter: { input: '$l', cond: { $gt: ['$$this', 1] }, limit: 1 } } } }, { $sort: { _id: 1 } }]).toArray(),
        [{ _id: 1, f: [2] }, { _id: 2, f: [4] }],
        message('limit argument of $filter operator'),
        '$filter limit',
      ],
    ];
    for (const [run, expected, text, what] of cases) {
      await refused(run(bits), text, what);
      assert.deepEqual(await run(loose), expected, what);
    }
    // An update pipeline: refused under strict, applied without it.
    await refused(
      bits.updateOne({ _id: 1 }, [{ $set: { m: { $bitAnd: ['$n', 1] } } }]),
      message('$bitAnd'),
      'update pipeline',
    );
    assert.equal((await bits.findOne({ _id: 1 })).m, undefined);
    await loose.updateOne({ _id: 1 }, [{ $set: { m: { $bitAnd: ['$n', 1] } } }]);
    assert.equal((await bits.findOne({ _id: 1 })).m, 1);
    // A view defined by a non-strict client with such an operator: a strict read of it is
    // refused (its pipeline is parsed with the reader's API parameters), a non-strict one runs.
    const ldb = lenient.db('stable_api');
    await ldb.collection('bits_view').drop().catch(() => {});
    await ldb.createCollection('bits_view', { viewOn: 'bits', pipeline: [{ $set: { o: { $bitOr: ['$n', 8] } } }] });
    await refused(
      strict.db('stable_api').collection('bits_view').find({}).toArray(),
      message('$bitOr'),
      'find on a view',
    );
    assert.deepEqual(
      (await ldb.collection('bits_view').find({}, { sort: { _id: 1 }, projection: { o: 1 } }).toArray()),
      [{ _id: 1, o: 13 }, { _id: 2, o: 14 }],
    );
    // V1 operators, `$literal` data and query operators of the same spelling pass under strict.
    assert.deepEqual(
      await bits.aggregate([
        { $match: { n: { $bitsAllSet: 4 } } },
        { $project: { x: { $add: ['$n', 1] }, lit: { $literal: { $bitAnd: 1 } } } },
        { $sort: { _id: 1 } },
      ]).toArray(),
      [{ _id: 1, x: 6, lit: { $bitAnd: 1 } }, { _id: 2, x: 7, lit: { $bitAnd: 1 } }],
    );
    assert.deepEqual(
      await bits.aggregate([{ $group: { _id: null, m: { $median: { input: '$n', method: 'approximate' } } } }]).toArray(),
      [{ _id: null, m: 5 }],
    );
  });

  test('a non-strict V1 client may use them', async () => {
    const loose = lenient.db('stable_api').collection('items');
    assert.deepEqual((await loose.distinct('a')).sort(), ['x', 'y', 'z']);
    const stats = await loose.aggregate([{ $indexStats: {} }]).toArray();
    assert.deepEqual(stats.map((s) => s.name).sort(), ['_id_', 'a_1']);
    assert.equal((await loose.find({}, { showRecordId: false }).toArray()).length, 3);
  });
});
