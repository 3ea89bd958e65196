import {
  isEnumType,
  isInputObjectType,
  isInterfaceType,
  isListType,
  isNonNullType,
  isObjectType,
  isUnionType,
  type GraphQLSchema,
  type GraphQLType,
} from 'graphql';

/** The lists of an introspection answer whose sizes this schema fixes. */
type List = 'fields' | 'inputFields' | 'interfaces' | 'possibleTypes' | 'enumValues' | 'args' | 'directiveArgs';
/** What holds a type reference (`type { ofType … }`): a field, or an argument or input field. */
type RefSource = 'fields' | 'args' | 'inputFields' | 'directiveArgs';

/**
 * Where the cost walk is inside an introspection query: the meta type the selection set is on,
 * whether it enumerates every type of the schema (`all`), and, on a type reference, how many `ofType`
 * hops have been taken and the wrapping depths of the references it stands for.
 */
export interface IntrospectionPlace {
  on: '__Schema' | '__Type' | '__Field' | '__Directive' | '__InputValue' | '__EnumValue';
  all: boolean;
  /** On `__InputValue`: what it is an argument or input field of. */
  source?: RefSource;
  ref?: { hops: number; atLeast: number[] | null };
}

/** A field's step: the place of its selection set and how many items it returns per parent. */
export interface IntrospectionStep {
  place: IntrospectionPlace;
  items: number;
}

/**
 * The sizes of this schema's lists. A list reached while enumerating every type (`__schema { types
 * { fields } }`) is priced at its average, which adds up to exactly what the answer holds; one reached
 * from a single type (`__type`, `type`, `ofType`) at its largest, so no path is priced below what it
 * returns. `atLeast[k]`: how many type references of a source have k or more wrappers (non-null,
 * list), which prices each `ofType` level of a whole enumeration at what it holds.
 */
interface Sizes {
  types: number;
  directives: number;
  sum: Record<List, number>;
  max: Record<List, number>;
  atLeast: Record<RefSource, number[]>;
}

const cache = new WeakMap<GraphQLSchema, Sizes>();

function sizesOf(schema: GraphQLSchema): Sizes {
  const known = cache.get(schema);
  if (known) return known;
  const lists = (): Record<List, number> => ({
    fields: 0,
    inputFields: 0,
    interfaces: 0,
    possibleTypes: 0,
    enumValues: 0,
    args: 0,
    directiveArgs: 0,
  });
  const s: Sizes = {
    types: 0,
    directives: 0,
    sum: lists(),
    max: lists(),
    atLeast: { fields: [], args: [], inputFields: [], directiveArgs: [] },
  };
  const add = (key: List, n: number) => {
    s.sum[key] += n;
    s.max[key] = Math.max(s.max[key], n);
  };
  const ref = (source: RefSource, type: GraphQLType) => {
    const counts = s.atLeast[source];
    let k = 0;
    for (let t = type; ; t = t.ofType, k++) {
      counts[k] = (counts[k] ?? 0) + 1;
      if (!isNonNullType(t) && !isListType(t)) break;
    }
  };
  for (const type of Object.values(schema.getTypeMap())) {
    s.types++;
    if (isObjectType(type) || isInterfaceType(type)) {
      const fields = Object.values(type.getFields());
      add('fields', fields.length);
      add('interfaces', type.getInterfaces().length);
      for (const f of fields) {
        add('args', f.args.length);
        ref('fields', f.type);
        for (const a of f.args) ref('args', a.type);
      }
    }
    if (isInputObjectType(type)) {
      const fields = Object.values(type.getFields());
      add('inputFields', fields.length);
      for (const f of fields) ref('inputFields', f.type);
    }
    if (isInterfaceType(type) || isUnionType(type)) add('possibleTypes', schema.getPossibleTypes(type).length);
    if (isEnumType(type)) add('enumValues', type.getValues().length);
  }
  for (const d of schema.getDirectives()) {
    s.directives++;
    add('directiveArgs', d.args.length);
    for (const a of d.args) ref('directiveArgs', a.type);
  }
  cache.set(schema, s);
  return s;
}

/** The place under a root field `__schema` or `__type`. */
export const introspectionRoot = (name: string): IntrospectionPlace | undefined =>
  name === '__schema' ? { on: '__Schema', all: false } : name === '__type' ? { on: '__Type', all: false } : undefined;

/**
 * The step of field `name` at `at`: a list multiplies the price of what is under it by its size, as a
 * page of a connection does. Null: the field is always null here, so nothing under it runs. Undefined:
 * no step (a leaf, `__typename`).
 */
export function introspectionStep(schema: GraphQLSchema, at: IntrospectionPlace, name: string): IntrospectionStep | null | undefined {
  const s = sizesOf(schema);
  // Per item of the enumeration (exact in total), or the largest for one item.
  const per = (key: List, of: number) => (at.all ? s.sum[key] / Math.max(of, 1) : s.max[key]);
  const list = (on: IntrospectionPlace['on'], items: number, source?: RefSource): IntrospectionStep => ({
    place: { on, all: at.all, source },
    items,
  });
  // Each item is a named type reached from another: what is under it is priced at its largest.
  const types = (items: number): IntrospectionStep => ({ place: { on: '__Type', all: false }, items });
  const refOf = (source: RefSource): IntrospectionStep => ({
    place: { on: '__Type', all: false, ref: { hops: 0, atLeast: at.all ? s.atLeast[source] : null } },
    items: 1,
  });
  switch (`${at.on}.${name}`) {
    case '__Schema.types':
      return { place: { on: '__Type', all: true }, items: s.types };
    case '__Schema.directives':
      return { place: { on: '__Directive', all: true }, items: s.directives };
    case '__Schema.queryType':
      return types(1);
    case '__Schema.mutationType':
      return schema.getMutationType() ? types(1) : null;
    case '__Schema.subscriptionType':
      return schema.getSubscriptionType() ? types(1) : null;
    case '__Type.fields':
      return list('__Field', per('fields', s.types));
    case '__Type.inputFields':
      return list('__InputValue', per('inputFields', s.types), 'inputFields');
    case '__Type.interfaces':
      return types(per('interfaces', s.types));
    case '__Type.possibleTypes':
      return types(per('possibleTypes', s.types));
    case '__Type.enumValues':
      return list('__EnumValue', per('enumValues', s.types));
    case '__Type.ofType':
      return ofType(s, at.ref);
    case '__Field.args':
      return list('__InputValue', per('args', s.sum.fields), 'args');
    case '__Directive.args':
      return list('__InputValue', per('directiveArgs', s.directives), 'directiveArgs');
    case '__Field.type':
      return refOf('fields');
    case '__InputValue.type':
      return refOf(at.source ?? 'args');
    default:
      return undefined;
  }
}

/**
 * `ofType`: null on a named type. On a type reference, the next wrapper's share of the references
 * (enumerating them all), or, for one reference, 1 down to the deepest wrapping in the schema.
 */
function ofType(s: Sizes, ref: IntrospectionPlace['ref']): IntrospectionStep | null {
  if (!ref) return null;
  const hops = ref.hops + 1;
  const items = ref.atLeast ? (ref.atLeast[hops] ?? 0) / (ref.atLeast[ref.hops] || 1) : hops < deepest(s).length ? 1 : 0;
  if (items === 0) return null;
  return { place: { on: '__Type', all: false, ref: { hops, atLeast: ref.atLeast } }, items };
}

/** For one reference: as many levels as the most wrapped reference of any source has. */
const deepest = (s: Sizes): number[] => Object.values(s.atLeast).reduce((a, b) => (b.length > a.length ? b : a), []);
