// Schema validation with mongosh, following MongoDB's manual ("Specify JSON Schema
// Validation", "Specify Query Operator Validation", "Bypass Schema Validation"):
// db.createCollection with a validator, db.getCollectionInfos, the WriteError of an invalid
// insert with its errInfo, updates validated after the update, bypassDocumentValidation,
// validationAction "warn", and $jsonSchema as a query operator.
// Run: mongosh "mongodb://127.0.0.1:PORT/test?directConnection=true" --quiet --file validation.js
load(require('path').join(__dirname, '_lib.js'));

const d = scriptDb('mongosh_validation');

d.createCollection('students', {
  validator: {
    $jsonSchema: {
      bsonType: 'object',
      title: 'Student Object Validation',
      required: ['address', 'major', 'name', 'year'],
      properties: {
        name: { bsonType: 'string', description: "'name' must be a string and is required" },
        year: { bsonType: 'int', minimum: 2017, maximum: 3017 },
        gpa: { bsonType: ['double'], description: "'gpa' must be a double if the field exists" },
      },
    },
  },
});

const info = d.getCollectionInfos({ name: 'students' })[0];
checkEq(info.options.validationLevel, 'strict', 'validationLevel shown');
checkEq(info.options.validationAction, 'error', 'validationAction shown');
checkEq(info.options.validator.$jsonSchema.required, ['address', 'major', 'name', 'year'], 'validator shown');

// The manual's invalid student: gpa is an integer and address is missing.
const err = checkThrows(
  () => d.students.insertOne({ _id: 1, name: 'Alice', year: Int32(2019), major: 'History', gpa: Int32(3) }),
  'an invalid student is refused',
);
checkEq(err.code, 121, 'DocumentValidationFailure');
checkEq(err.errInfo.failingDocumentId, 1, 'failingDocumentId');
checkEq(err.errInfo.details.operatorName, '$jsonSchema', 'operatorName');
const rules = err.errInfo.details.schemaRulesNotSatisfied;
checkEq(rules.map((r) => r.operatorName), ['properties', 'required'], 'failed rules');
checkEq(rules[0].propertiesNotSatisfied[0].propertyName, 'gpa', 'failed property');
checkEq(rules[0].propertiesNotSatisfied[0].details[0].reason, 'type did not match', 'reason');
checkEq(rules[1].missingProperties, ['address'], 'missing properties');
checkEq(d.students.countDocuments({}), 0, 'nothing was written');

d.students.insertOne({ _id: 2, name: 'Bob', year: Int32(2020), major: 'Math', address: { city: 'Oslo' }, gpa: 3.5 });
const upd = checkThrows(() => d.students.updateOne({ _id: 2 }, { $set: { year: Int32(1999) } }), 'an invalid update');
checkEq(upd.code, 121, 'update refused');
checkEq(d.students.findOne({ _id: 2 }).year, 2020, 'the document is unchanged');

// bypassDocumentValidation (the shell's own user has every privilege without auth).
d.students.insertOne({ _id: 3, name: 'Carl' }, { bypassDocumentValidation: true });
checkEq(d.students.countDocuments({}), 2, 'bypassed insert written');

// A query operator validator with validationAction "warn": the write goes through.
d.createCollection('contacts', { validator: { phone: { $type: 'string' } }, validationAction: 'warn' });
d.contacts.insertOne({ _id: 'w', phone: 12345 });
checkEq(d.contacts.findOne({ _id: 'w' }).phone, 12345, 'warn lets the write through');

// $jsonSchema as a query operator.
const typed = d.students.find({ $jsonSchema: { required: ['address'] } }).toArray();
checkEq(typed.map((s) => s._id), [2], '$jsonSchema in find');

// MongoDB's refusals at create.
const refused = checkThrows(
  () => d.createCollection('bad', { validator: { $jsonSchema: { $schema: 'http://json-schema.org/draft-04/schema#' } } }),
  '$schema is refused',
);
checkEq(refused.code, 9, 'FailedToParse');
checkEq(checkThrows(() => d.createCollection('bad', { validator: { $where: 'true' } }), '$where').code, 224, 'QueryFeatureNotAllowed');

print('OK');
