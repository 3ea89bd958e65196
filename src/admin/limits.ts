import { GraphQLError, Kind, type ASTVisitor, type FragmentDefinitionNode, type SelectionSetNode, type ValidationContext } from 'graphql';

/** Default page size assumed for a list field without `first`, when pricing a query. */
const DEFAULT_PAGE = 20;
/** The largest page; `first` must be 1 to this. A `first` given by a variable is priced at it. */
const MAX_PAGE = 100;

/**
 * Query depth and cost limits, as one validation rule: a query is priced before it runs. A field costs
 * 1, times the page sizes (`first`) of the connections it sits under; fragments count where spread.
 * Fields under `@skip`/`@include` are priced as if they ran (their condition may be a variable), and
 * a literal `first` outside 1..100 is refused here, so no page can be priced below 1.
 */
export function queryLimits(maxDepth: number, maxCost: number) {
  return (context: ValidationContext): ASTVisitor => {
    const fragments = new Map<string, FragmentDefinitionNode>();
    for (const def of context.getDocument().definitions) if (def.kind === Kind.FRAGMENT_DEFINITION) fragments.set(def.name.value, def);

    function walk(set: SelectionSetNode, depth: number, multiplier: number, seen: Set<string>): { depth: number; cost: number } {
      let deepest = depth;
      let cost = 0;
      for (const sel of set.selections) {
        if (sel.kind === Kind.FIELD) {
          if (sel.name.value.startsWith('__')) continue;
          cost += multiplier;
          if (sel.selectionSet) {
            const firstArg = sel.arguments?.find((a) => a.name.value === 'first');
            let pageSize: number | undefined = sel.name.value === 'edges' ? 1 : undefined;
            if (firstArg) {
              pageSize = MAX_PAGE;
              if (firstArg.value.kind === Kind.INT) {
                const n = Number(firstArg.value.value);
                if (n >= 1 && n <= MAX_PAGE) pageSize = n;
                else context.reportError(new GraphQLError(`first: must be 1 to ${MAX_PAGE}`, { nodes: [firstArg], extensions: { field: 'first' } }));
              }
            }
            const isConnection = sel.arguments?.some((a) => a.name.value === 'first' || a.name.value === 'after') || ['clients', 'users', 'auditEvents'].includes(sel.name.value);
            const next = multiplier * (isConnection ? (pageSize ?? DEFAULT_PAGE) : 1);
            const inner = walk(sel.selectionSet, depth + 1, next, seen);
            deepest = Math.max(deepest, inner.depth);
            cost += inner.cost;
          }
        } else if (sel.kind === Kind.INLINE_FRAGMENT) {
          const inner = walk(sel.selectionSet, depth, multiplier, seen);
          deepest = Math.max(deepest, inner.depth);
          cost += inner.cost;
        } else {
          const name = sel.name.value;
          const frag = fragments.get(name);
          if (!frag || seen.has(name)) continue;
          const inner = walk(frag.selectionSet, depth, multiplier, new Set([...seen, name]));
          deepest = Math.max(deepest, inner.depth);
          cost += inner.cost;
        }
      }
      return { depth: deepest, cost };
    }

    return {
      OperationDefinition(node) {
        const { depth, cost } = walk(node.selectionSet, 1, 1, new Set());
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
