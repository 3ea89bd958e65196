import {
  GraphQLError,
  getIntrospectionQuery,
  Kind,
  parse,
  validate,
  type ASTVisitor,
  type GraphQLSchema,
  type FieldNode,
  type FragmentDefinitionNode,
  type SelectionSetNode,
  type ValidationContext,
} from 'graphql';
import { introspectionRoot, introspectionStep, type IntrospectionPlace } from './introspection-cost.ts';

/** Default page size assumed for a list field without `first`, when pricing a query. */
const DEFAULT_PAGE = 20;
/** The largest page; `first` must be 1 to this. A `first` given by a variable is priced at it. */
const MAX_PAGE = 100;

/**
 * Query depth and cost limits, as one validation rule: a query is priced before it runs. A field costs
 * 1, times the page sizes (`first`) of the connections it sits under; fragments count where spread.
 * Fields under `@skip`/`@include` are priced as if they ran (their condition may be a variable), and
 * a literal `first` outside 1..100 is refused here, so no page can be priced below 1.
 *
 * Introspection (`__schema`, `__type` and everything under them) is priced the same way, its lists
 * sized from the schema itself (introspection-cost.ts): without that, aliases and nesting of free
 * introspection fields turned a 63 KB query into a 10.5 MB answer. An `ofType` that cannot be set in
 * this schema (below its deepest wrapping) is priced as the null it returns, so what GraphQL tools
 * send (graphql-js `getIntrospectionQuery`, nine `ofType` deep) stays within both limits.
 */
export function queryLimits(maxDepth: number, maxCost: number, measured?: (cost: number) => void) {
  return (context: ValidationContext): ASTVisitor => {
    const fragments = new Map<string, FragmentDefinitionNode>();
    for (const def of context.getDocument().definitions) if (def.kind === Kind.FRAGMENT_DEFINITION) fragments.set(def.name.value, def);

    const schema = context.getSchema();

    /** The multiplier and place under a field: a connection's page size, or an introspection list's size. */
    function step(
      sel: FieldNode,
      multiplier: number,
      intro: IntrospectionPlace | undefined,
    ): { next: number; intro?: IntrospectionPlace } | null {
      const name = sel.name.value;
      const root = intro ? undefined : introspectionRoot(name);
      const meta = intro ? introspectionStep(schema, intro, name) : root && { place: root, items: 1 };
      if (meta === null) return null;
      if (meta) return { next: multiplier * meta.items, intro: meta.place };
      if (intro) return { next: multiplier, intro };
      const firstArg = sel.arguments?.find((a) => a.name.value === 'first');
      let pageSize: number | undefined = name === 'edges' ? 1 : undefined;
      if (firstArg) {
        pageSize = MAX_PAGE;
        if (firstArg.value.kind === Kind.INT) {
          const n = Number(firstArg.value.value);
          if (n >= 1 && n <= MAX_PAGE) pageSize = n;
          else
            context.reportError(new GraphQLError(`first: must be 1 to ${MAX_PAGE}`, { nodes: [firstArg], extensions: { field: 'first' } }));
        }
      }
      const isConnection =
        sel.arguments?.some((a) => a.name.value === 'first' || a.name.value === 'after') ||
        ['clients', 'users', 'auditEvents'].includes(name);
      return { next: multiplier * (isConnection ? (pageSize ?? DEFAULT_PAGE) : 1) };
    }

    function walk(
      set: SelectionSetNode,
      depth: number,
      multiplier: number,
      seen: Set<string>,
      intro?: IntrospectionPlace,
    ): { depth: number; cost: number } {
      let deepest = depth;
      let cost = 0;
      for (const sel of set.selections) {
        let inner: { depth: number; cost: number } | undefined;
        if (sel.kind === Kind.FIELD) {
          cost += multiplier;
          const under = sel.selectionSet && step(sel, multiplier, intro);
          // A selection that never runs (an `ofType` that is always null) adds neither cost nor depth.
          if (under) inner = walk(sel.selectionSet!, depth + 1, under.next, seen, under.intro);
        } else if (sel.kind === Kind.INLINE_FRAGMENT) {
          inner = walk(sel.selectionSet, depth, multiplier, seen, intro);
        } else {
          const name = sel.name.value;
          const frag = fragments.get(name);
          if (!frag || seen.has(name)) continue;
          inner = walk(frag.selectionSet, depth, multiplier, new Set([...seen, name]), intro);
        }
        if (inner) {
          deepest = Math.max(deepest, inner.depth);
          cost += inner.cost;
        }
      }
      return { depth: deepest, cost };
    }

    return {
      OperationDefinition(node) {
        const { depth, cost: priced } = walk(node.selectionSet, 1, 1, new Set());
        // Introspection lists priced at their average make fractions; a part of a field is a field.
        const cost = Math.ceil(priced - 1e-9);
        measured?.(cost);
        if (depth > maxDepth) {
          context.reportError(new GraphQLError(`query depth ${depth} exceeds the limit of ${maxDepth}`, { nodes: [node] }));
        }
        if (cost > maxCost) {
          context.reportError(new GraphQLError(`query cost ${cost} exceeds the limit of ${maxCost}`, { nodes: [node] }));
        }
      },
    };
  };
}

/** What GraphQL tools send to learn a schema: graphql-js's introspection query with every option. */
const TOOLS_INTROSPECTION = getIntrospectionQuery({
  descriptions: true,
  specifiedByUrl: true,
  directiveIsRepeatable: true,
  schemaDescription: true,
  inputValueDeprecation: true,
});

/**
 * The cost limit for a schema: `floor`, or a fifth above what the tools' introspection query of this
 * schema costs, whichever is higher. Introspection is priced at what its answer holds, so the whole
 * schema's grows with every type added; the limit follows it, and a query that asks for the schema
 * many times over (aliases, nesting) stays refused (docs/decisions.md "GraphQL cost").
 */
export function costLimit(schema: GraphQLSchema, floor: number): number {
  let cost = 0;
  validate(schema, parse(TOOLS_INTROSPECTION), [queryLimits(Number.POSITIVE_INFINITY, Number.POSITIVE_INFINITY, (c) => (cost = c))]);
  return Math.max(floor, Math.ceil(cost * 1.2));
}
