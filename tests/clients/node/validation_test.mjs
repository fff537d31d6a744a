// Schema validation through Mongoose (9.x) and the Node.js driver, run with `node --test`.
// An application's Mongoose schema validates in the application (`validate`), the
// collection's `$jsonSchema` validator in the server: a document the schema lets through but
// the collection refuses reaches the application as MongoDB's 121 DocumentValidationFailure
// with its errInfo, and nothing is written.
//
// The server must already be running: tests/run_all.sh starts a fresh docgate and passes its
// address in DOCGATE_URI.

import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import mongoose from 'mongoose';

const uri = process.env.DOCGATE_URI;
if (!uri) {
  console.error('DOCGATE_URI is not set (tests/run_all.sh sets it)');
  process.exit(2);
}

const OPTS = { serverSelectionTimeoutMS: 10000 };

describe('schema validation with Mongoose', () => {
  let conn;
  let Product;

  before(async () => {
    conn = await mongoose.createConnection(uri, { ...OPTS, dbName: 'mongoose_validation' }).asPromise();
    await conn.dropDatabase();
    // The collection's validator: a price of at least 1 and a sku of 3 upper-case letters.
    await conn.db.createCollection('products', {
      validator: {
        $jsonSchema: {
          bsonType: 'object',
          required: ['sku', 'price'],
          properties: {
            sku: { bsonType: 'string', pattern: '^[A-Z]{3}$', description: 'three capitals' },
            price: { bsonType: ['int', 'long', 'double', 'decimal'], minimum: 1 },
          },
        },
      },
    });
    // The application's schema is laxer: any non-empty sku, any non-negative price.
    const schema = new mongoose.Schema({
      sku: { type: String, required: true, validate: (v) => v.length > 0 },
      price: { type: Number, required: true, min: 0 },
    });
    Product = conn.model('Product', schema, 'products');
  });

  after(async () => {
    await conn?.close();
  });

  test('a document both accept is saved', async () => {
    const saved = await Product.create({ sku: 'ABC', price: 5 });
    assert.equal((await Product.findById(saved._id)).sku, 'ABC');
  });

  test("Mongoose's own validation still runs first", async () => {
    await assert.rejects(Product.create({ sku: '', price: 5 }), mongoose.Error.ValidationError);
  });

  test('the collection validator refuses what the schema lets through', async () => {
    const before = await Product.countDocuments();
    const err = await Product.create({ sku: 'abc', price: 0 }).then(
      () => assert.fail('the server accepted a document its validator refuses'),
      (e) => e,
    );
    // Mongoose bundles its own copy of the driver, so compare by name, not by class.
    assert.equal(err.name, 'MongoServerError', `expected a MongoServerError, got ${err}`);
    assert.equal(err.code, 121);
    assert.equal(err.codeName ?? 'DocumentValidationFailure', 'DocumentValidationFailure');
    const details = err.errInfo.details;
    assert.equal(details.operatorName, '$jsonSchema');
    const properties = details.schemaRulesNotSatisfied.find((r) => r.operatorName === 'properties');
    const names = properties.propertiesNotSatisfied.map((p) => p.propertyName).sort();
    assert.deepEqual(names, ['price', 'sku']);
    const sku = properties.propertiesNotSatisfied.find((p) => p.propertyName === 'sku');
    assert.equal(sku.description, 'three capitals');
    assert.equal(sku.details[0].operatorName, 'pattern');
    assert.equal(sku.details[0].reason, 'regular expression did not match');
    assert.equal(await Product.countDocuments(), before);
  });

  test('updates through Mongoose are validated by the server too', async () => {
    const doc = await Product.create({ sku: 'XYZ', price: 2 });
    const err = await Product.updateOne({ _id: doc._id }, { $set: { price: 0.5 } }).then(
      () => assert.fail('the server accepted an invalid update'),
      (e) => e,
    );
    assert.equal(err.code, 121);
    assert.equal((await Product.findById(doc._id)).price, 2);
  });

  test('insertMany reports the refused document by index', async () => {
    const err = await Product.insertMany(
      [
        { sku: 'DEF', price: 3 },
        { sku: 'ghi', price: 3 },
      ],
      { ordered: true },
    ).then(
      () => assert.fail('insertMany succeeded'),
      (e) => e,
    );
    const writeErrors = err.writeErrors ?? err.result?.getWriteErrors?.() ?? [];
    assert.equal(writeErrors.length, 1);
    assert.equal(writeErrors[0].index, 1);
    assert.equal(writeErrors[0].code, 121);
    assert.equal(await Product.countDocuments({ sku: 'DEF' }), 1);
  });
});
