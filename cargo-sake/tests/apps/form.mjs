// Runs the preview's form functions (cargo-sake/assets/apps/form.mjs) for cargo-sake/tests/apps.rs:
// reads a JSON array of cases {schema, values} on stdin and prints, for each, {fields, args}
// or {fields, error}.
import { readFileSync } from 'node:fs';
import { argumentsOf, fieldsOf } from '../../assets/apps/form.mjs';

const cases = JSON.parse(readFileSync(0, 'utf8'));
const out = cases.map(({ schema, values }) => {
  const fields = fieldsOf(schema);
  try {
    return { fields, args: argumentsOf(fields, values ?? {}) };
  } catch (e) {
    return { fields, error: e.message };
  }
});
console.log(JSON.stringify(out));
