import { describe, expect, test } from '@jest/globals';
import { buildSchema, parse, validate } from 'graphql';
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
    expect(check('{ node { ...F } } fragment F on Node { child { child { child { id } } } }')).toEqual(['query depth 5 exceeds the limit of 4']);
  });
  test('cost multiplies by page size, and aliases add up', () => {
    expect(check('{ nodes(first: 10) { edges { node { id } } } }')).toEqual([]);
    expect(check('{ a: nodes(first: 30) { edges { node { id } } } b: nodes(first: 30) { edges { node { id } } } }')).toEqual([
      'query cost 182 exceeds the limit of 100',
    ]);
  });
});
