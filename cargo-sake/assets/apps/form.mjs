// The form of a tool, made from its input schema, for the MCP Apps preview of `cargo sake dev`
// (host.mjs). Pure functions, run in node by cargo-sake/tests/apps.rs too.
//
// fieldsOf(schema): one field per property of an object schema, in the schema's order:
//   { name, label, description, kind, required, options, initial }
//   kind: "text" (a string), "integer", "number", "boolean" and "enum" (a choice among
//   `options`; an optional one has "" for none), or "json" (anything else: an object, an
//   array, a union, a `$ref`), typed as JSON. `initial` is the schema's `default`, as the
//   input shows it ("" without one).
// argumentsOf(fields, values): the tool's arguments from the inputs' values (strings, by
//   name): an empty optional field is left out; a value that does not fit its kind, or a
//   required field left empty, throws an Error naming the field.

/** The one type a property's schema says, leaving out "null" (`["string", "null"]`, an
 * `anyOf` of one type and null); null when it says several or none. */
function typeOf(schema) {
  if (!schema || typeof schema !== 'object') return null;
  const t = schema.type;
  if (typeof t === 'string') return t;
  if (Array.isArray(t)) {
    const some = t.filter((x) => x !== 'null');
    return some.length === 1 ? some[0] : null;
  }
  const union = schema.anyOf ?? schema.oneOf;
  if (Array.isArray(union)) {
    const some = union.filter((s) => !(s && s.type === 'null'));
    return some.length === 1 ? typeOf(some[0]) : null;
  }
  return null;
}

/** The values an enum property takes, when they are all strings, numbers or booleans. */
function enumOf(schema) {
  const values = Array.isArray(schema?.enum)
    ? schema.enum
    : Array.isArray(schema?.oneOf) && schema.oneOf.every((s) => s && 'const' in s)
      ? schema.oneOf.map((s) => s.const)
      : null;
  if (!values || values.length === 0) return null;
  return values.every((v) => ['string', 'number', 'boolean'].includes(typeof v)) ? values : null;
}

function shown(value, kind) {
  if (value === undefined) return '';
  if (kind === 'json') return JSON.stringify(value);
  return String(value);
}

export function fieldsOf(schema) {
  const properties = schema && typeof schema === 'object' ? schema.properties : null;
  if (!properties || typeof properties !== 'object') return [];
  const required = new Set(Array.isArray(schema.required) ? schema.required : []);
  return Object.entries(properties).map(([name, property]) => {
    const p = property && typeof property === 'object' ? property : {};
    const values = enumOf(p);
    const type = typeOf(p);
    let kind;
    let options = null;
    if (values) {
      kind = 'enum';
      options = values.map(String);
    } else if (type === 'string') {
      kind = 'text';
    } else if (type === 'integer' || type === 'number') {
      kind = type;
    } else if (type === 'boolean') {
      kind = 'boolean';
      options = ['true', 'false'];
    } else {
      kind = 'json';
    }
    const isRequired = required.has(name);
    if (options && !isRequired) options = ['', ...options];
    return {
      name,
      label: typeof p.title === 'string' ? p.title : name,
      description: typeof p.description === 'string' ? p.description : '',
      kind,
      required: isRequired,
      options,
      initial: shown(p.default, kind),
      // An enum's values keep their JSON type in the arguments.
      values: values ?? null,
    };
  });
}

export function argumentsOf(fields, values) {
  const args = {};
  for (const field of fields) {
    const raw = values[field.name] ?? '';
    const text = typeof raw === 'string' ? raw : String(raw);
    if (text.trim() === '' && field.kind !== 'text') {
      if (field.required) throw new Error(`${field.label} is required`);
      continue;
    }
    if (text === '' && field.kind === 'text') {
      if (field.required) throw new Error(`${field.label} is required`);
      continue;
    }
    switch (field.kind) {
      case 'text':
        args[field.name] = text;
        break;
      case 'integer': {
        const t = text.trim();
        if (!/^-?\d+$/.test(t) || !Number.isSafeInteger(Number(t))) {
          throw new Error(`${field.label}: ${JSON.stringify(text)} is not an integer`);
        }
        args[field.name] = Number(t);
        break;
      }
      case 'number': {
        const n = Number(text.trim());
        if (!Number.isFinite(n)) {
          throw new Error(`${field.label}: ${JSON.stringify(text)} is not a number`);
        }
        args[field.name] = n;
        break;
      }
      case 'boolean':
        if (text !== 'true' && text !== 'false') {
          throw new Error(`${field.label}: choose true or false`);
        }
        args[field.name] = text === 'true';
        break;
      case 'enum': {
        const i = field.values.map(String).indexOf(text);
        if (i < 0) throw new Error(`${field.label}: ${JSON.stringify(text)} is not one of the choices`);
        args[field.name] = field.values[i];
        break;
      }
      default:
        try {
          args[field.name] = JSON.parse(text);
        } catch (e) {
          throw new Error(`${field.label}: not JSON (${e.message})`);
        }
    }
  }
  return args;
}
