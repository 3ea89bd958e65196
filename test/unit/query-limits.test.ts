import { describe, expect, test } from '@jest/globals';
import { buildSchema, execute, getIntrospectionQuery, parse, validate } from 'graphql';
import { queryLimits } from '../../src/admin/limits.ts';

const schema = buildSchema(`
  type Query { node: Node, nodes(first: Int): NodeConnection }
  type Node { id: ID, child: Node }
  type NodeEdge { node: Node }
  type NodeConnection { edges: [NodeEdge] }
`);
const check = (query: string, depth = 4, cost = 100) => validate(schema, parse(query), [queryLimits(depth, cost)]).map((e) => e.message);

describe('query depth and cost limits', () => {
  test('a query within both limits passes', () => {
    expect(check('{ node { id child { id } } }')).toEqual([]);
  });
  test('depth counts nesting, through fragments too', () => {
    expect(check('{ node { child { child { child { id } } } } }')).toEqual(['query depth 5 exceeds the limit of 4']);
    expect(check('{ node { ...F } } fragment F on Node { child { child { child { id } } } }')).toEqual([
      'query depth 5 exceeds the limit of 4',
    ]);
  });
  test('cost multiplies by page size, and aliases add up', () => {
    expect(check('{ nodes(first: 10) { edges { node { id } } } }')).toEqual([]);
    expect(check('{ a: nodes(first: 30) { edges { node { id } } } b: nodes(first: 30) { edges { node { id } } } }')).toEqual([
      'query cost 182 exceeds the limit of 100',
    ]);
  });
  test('introspection is priced like any other field, its lists sized from the schema', () => {
    /** The price the rule puts on `query`, from its message with a limit of 0. */
    const price = (query: string) => Number(/query cost (\d+)/.exec(validate(schema, parse(query), [queryLimits(100, 0)])[0]!.message)![1]);
    /** How many fields the answer holds. */
    const size = (query: string) => {
      let n = 0;
      const walk = (v: unknown): void => {
        if (Array.isArray(v)) v.forEach(walk);
        else if (v && typeof v === 'object')
          for (const value of Object.values(v)) {
            n++;
            walk(value);
          }
      };
      walk((execute({ schema, document: parse(query) }) as { data: unknown }).data);
      return n;
    };
    // Enumerating the whole schema is priced at what it returns, nine ofType levels deep or not.
    for (const query of [getIntrospectionQuery(), '{ __schema { types { name fields { name type { name ofType { name } } } } } }'])
      expect(price(query)).toBe(size(query));
    // From one type, each list is priced at its largest, so no path is priced below its answer.
    const fromOne = '{ __type(name: "Node") { fields { name type { fields { name } } } } }';
    expect(price(fromOne)).toBeGreaterThanOrEqual(size(fromOne));
    expect(check('{ a: __schema { types { name } } b: __schema { types { name } } }', 10, 10)).toEqual([
      expect.stringMatching(/^query cost \d+ exceeds the limit of 10$/),
    ]);
  });
});
