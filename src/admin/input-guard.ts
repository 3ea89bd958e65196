import type { ApolloServerPlugin } from '@apollo/server';
import { GraphQLError, Kind, visit, type ASTNode, type DocumentNode } from 'graphql';

const badInput = (field: string) =>
  new GraphQLError(`${field}: must not contain a NUL character`, { extensions: { code: 'BAD_USER_INPUT', field, http: { status: 400 } } });

/** The first string under `value` (a variable's JSON) holding NUL, by its path. */
function nulIn(value: unknown, path: string): string | undefined {
  if (typeof value === 'string') return value.includes('\0') ? path : undefined;
  if (Array.isArray(value)) {
    for (const v of value) {
      const hit = nulIn(v, path);
      if (hit) return hit;
    }
  } else if (value && typeof value === 'object') {
    for (const [k, v] of Object.entries(value)) {
      const hit = nulIn(v, k);
      if (hit) return hit;
    }
  }
  return undefined;
}

/** Which argument or input field each variable is passed to: the name a caller knows the field by. */
function variableFields(document: DocumentNode): Map<string, string> {
  const fields = new Map<string, string>();
  visit(document, {
    Argument(node) {
      if (node.value.kind === Kind.VARIABLE) fields.set(node.value.name.value, node.name.value);
    },
    ObjectField(node) {
      if (node.value.kind === Kind.VARIABLE) fields.set(node.value.name.value, node.name.value);
    },
  });
  return fields;
}

/** The field a NUL-holding variable stands for: inside an input object the key itself, else its argument. */
function nulInVariables(document: DocumentNode, variables: Record<string, unknown>): string | undefined {
  const fields = variableFields(document);
  for (const [name, value] of Object.entries(variables)) {
    const hit = nulIn(value, fields.get(name) ?? name);
    if (hit) return hit;
  }
  return undefined;
}

/**
 * A literal holding NUL anywhere in the document (arguments, input objects, variables' defaults), by
 * the name of the argument, input field or variable it belongs to.
 */
function nulInDocument(document: DocumentNode): string | undefined {
  let hit: string | undefined;
  visit(document, {
    StringValue(node, _key, _parent, _path, ancestors) {
      if (hit || !node.value.includes('\0')) return;
      for (let i = ancestors.length - 1; i >= 0; i--) {
        const a = ancestors[i] as ASTNode;
        if (a.kind === Kind.ARGUMENT || a.kind === Kind.OBJECT_FIELD) return void (hit = a.name.value);
        if (a.kind === Kind.VARIABLE_DEFINITION) return void (hit = a.variable.name.value);
      }
      hit = 'query';
    },
  });
  return hit;
}

/**
 * Refuses a NUL character anywhere in an operation's arguments or variables, before any resolver
 * runs: PostgreSQL cannot store it in text, and no name, URI or search legitimately holds one. The
 * error is BAD_USER_INPUT naming the field, in the GraphQL shape.
 */
export const inputGuard: ApolloServerPlugin = {
  async requestDidStart() {
    return {
      async didResolveOperation({ request, document }) {
        const field = nulInDocument(document) ?? nulInVariables(document, request.variables ?? {});
        if (field) throw badInput(field);
      },
    };
  },
};
