import { GraphQLScalarType, valueFromASTUntyped } from 'graphql';
import type { Resolvers } from '../generated/graphql.ts';

/**
 * The `JSON` scalar: any JSON value, as it is (a user's attributes, an object of claims). A literal in
 * a query is read as JSON too (`attributes: { department: "Sales" }`).
 */
export const jsonScalar = new GraphQLScalarType({
  name: 'JSON',
  description: "Any JSON value: an object of claims, a user's attributes.",
  serialize: (value) => value,
  parseValue: (value) => value,
  parseLiteral: (ast, variables) => valueFromASTUntyped(ast, variables),
});

/**
 * Who may use which application and what it is told (docs/access-and-claims.md): the groups pickers
 * offer and the admin's preview. The rules are the services'; the resolvers only translate.
 */
export const accessResolvers: Resolvers = {
  JSON: jsonScalar,

  Query: {
    groups: (_p, { first, after, search }, { app }) => app.users.groups({ first, after, search }),
    previewAccess: (_p, { applicationId, userId }, { app }) => app.preview.of(applicationId, userId),
  },
};
