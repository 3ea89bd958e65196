import {
  defaultFieldResolver,
  getNamedType,
  GraphQLScalarType,
  isInputObjectType,
  isObjectType,
  valueFromASTUntyped,
  type ConstDirectiveNode,
  type GraphQLFieldResolver,
  type GraphQLInputObjectType,
  type GraphQLInputType,
  type GraphQLSchema,
} from 'graphql';
import { isPermission, type Permission } from '../admin-roles/model.ts';
import { grantOf, lacking } from '../admin-roles/rules.ts';
import { ForbiddenError } from '../errors/service.ts';
import type { AdminContext } from './context.ts';
import { forbidden } from './errors.ts';

/**
 * The admin API's one permission check (docs/admin-api.md "Roles and permissions"): every field
 * the SDL marks `@requires` (every Query and Mutation field, and the fields that reveal a secret)
 * has its resolver wrapped when the schema is built, so nothing runs before its check. The
 * directive's arguments are described in graphql/admin-roles.graphql.
 */

interface Rule {
  permission?: Permission;
  ownedClient?: string;
  ownedServiceProvider?: string;
  user?: string;
}

type Directed = { directives?: readonly ConstDirectiveNode[] } | null | undefined;

/** The `@requires` rules of a definition; a permission outside the fixed list stops the start. */
function rulesOf(node: Directed, where: string): Rule[] {
  return (node?.directives ?? [])
    .filter((d) => d.name.value === 'requires')
    .map((d) => {
      const args = Object.fromEntries((d.arguments ?? []).map((a) => [a.name.value, valueFromASTUntyped(a.value)])) as Record<
        string,
        string
      >;
      if (args.permission !== undefined && !isPermission(args.permission)) {
        throw new Error(`${where}: @requires names ${JSON.stringify(args.permission)}, which is not a permission`);
      }
      return args as Rule;
    });
}

/** The narrower permissions an input field may be given with (`@allowedWith`). */
const allowedWith = (node: Directed): Permission[] =>
  (node?.directives ?? [])
    .filter((d) => d.name.value === 'allowedWith')
    .flatMap((d) => (d.arguments ?? []).map((a) => valueFromASTUntyped(a.value) as string))
    .filter(isPermission);

const ROOTS = ['Query', 'Mutation'] as const;

/** The Query and Mutation fields that carry no `@requires`: none may, or the server does not start. */
export function unguardedOperations(schema: GraphQLSchema): string[] {
  return ROOTS.flatMap((root) => {
    const type = schema.getType(root);
    if (!type || !isObjectType(type)) return [];
    return Object.values(type.getFields())
      .filter((f) => rulesOf(f.astNode, `${root}.${f.name}`).length === 0)
      .map((f) => `${root}.${f.name}`);
  });
}

/** A value found by a path: an argument's name, or dotted into the parent (`client.clientId`). */
function lookup(path: string, parent: unknown, args: Record<string, unknown>): unknown {
  if (!path.includes('.') && path in args) return args[path];
  return path
    .split('.')
    .reduce<unknown>((v, key) => (v && typeof v === 'object' ? (v as Record<string, unknown>)[key] : undefined), parent);
}

/** What a passed check used: the permission (and its role) the audit trail names, and an owner's view. */
interface Allowed {
  permission?: Permission;
  role?: string;
  /** A list an owner sees: only theirs. */
  ownedBy?: string;
}

/** The top-level input fields an operation is given, each with the narrower permissions that may give it. */
interface Given {
  name: string;
  allowed: Permission[];
}

const named = (roles: string[]) => (roles.length > 0 ? roles.join(', ') : 'none');

/**
 * One rule of a field: the permission held; or, failing it, a narrower one every given input field
 * allows (`@allowedWith`), `apps:owned` only for an owner of the application the rule points at.
 */
async function allow(
  rule: Rule,
  what: string,
  parent: unknown,
  args: Record<string, unknown>,
  ctx: AdminContext,
  given: Given[] = [],
): Promise<Allowed> {
  const { grant, app } = ctx;
  const { permission } = rule;
  if (!permission) return {};
  if (grant.sources.has(permission)) return { permission, role: grant.sources.get(permission) };
  const where = rule.ownedClient ?? rule.ownedServiceProvider;
  let owns: boolean | undefined;
  const ownsIt = async (): Promise<boolean> => {
    if (owns !== undefined) return owns;
    const id = where && where !== '*' ? lookup(where, parent, args) : undefined;
    const application =
      typeof id !== 'string' ? undefined : rule.ownedClient ? await app.clients.find(id) : await app.samlProviders.find(id);
    owns = !!grant.userId && !!application?.owners.includes(grant.userId);
    return owns;
  };
  /** Whether the caller may act with narrower permission `q`. */
  const mayWith = async (q: Permission) => grant.sources.has(q) && (q !== 'apps:owned' || (!!where && (await ownsIt())));
  if (where === '*' && grant.sources.has('apps:owned') && grant.userId) {
    return { permission: 'apps:owned', role: grant.sources.get('apps:owned'), ownedBy: grant.userId };
  }
  // Without input fields, ownership alone may do (reading one application, rotating its secret).
  const narrower =
    given.length > 0
      ? given.slice(1).reduce((common, f) => common.filter((q) => f.allowed.includes(q)), given[0]!.allowed)
      : where
        ? (['apps:owned'] as Permission[])
        : [];
  for (const q of narrower) if (await mayWith(q)) return { permission: q, role: grant.sources.get(q) };
  // Name the fields that need more, when the caller may give the others (or owns the application).
  if (given.length > 0) {
    const blocked: string[] = [];
    for (const f of given) {
      let ok = false;
      for (const q of f.allowed) ok ||= await mayWith(q);
      if (!ok) blocked.push(f.name);
    }
    const partly = blocked.length < given.length || (!!where && grant.sources.has('apps:owned') && (await ownsIt()));
    if (partly && blocked.length > 0) {
      throw forbidden(`${what}: ${blocked.join(', ')} ${blocked.length === 1 ? 'needs' : 'need'} the permission ${permission}`, permission);
    }
  }
  const orOwner = where ? ", or apps:owned as one of the application's owners" : '';
  throw forbidden(`${what} needs the permission ${permission}${orOwner}; your roles (${named(grant.roles)}) do not give it`, permission);
}

/** The caller must hold every permission of the user acted on: taking over an account is holding its rights. */
async function checkTarget(path: string, args: Record<string, unknown>, ctx: AdminContext): Promise<void> {
  const id = args[path];
  if (typeof id !== 'string') return;
  const target = await ctx.app.users.find(id);
  if (!target) return; // the service answers NOT_FOUND
  const missing = lacking(ctx.grant, grantOf(target.id, target.roles, ctx.grant.catalogue).sources.keys());
  if (missing.length > 0) {
    throw forbidden(
      `user ${id} holds permissions you lack (${missing.join(', ')}): only someone holding all of them may act on that user`,
      missing[0],
    );
  }
}

const inputObject = (type: GraphQLInputType): GraphQLInputObjectType | undefined => {
  const inner = getNamedType(type);
  return isInputObjectType(inner) ? inner : undefined;
};

/** The rules of the input fields given in `value` (of `type`), nested ones included. */
async function checkInput(type: GraphQLInputObjectType, value: unknown, path: string, ctx: AdminContext): Promise<void> {
  const values = Array.isArray(value) ? value : [value];
  for (const v of values) {
    if (!v || typeof v !== 'object') continue;
    for (const [key, given] of Object.entries(v as Record<string, unknown>)) {
      const field = type.getFields()[key];
      if (!field || given === undefined) continue;
      for (const rule of rulesOf(field.astNode, `${type.name}.${key}`)) await allow(rule, `${path}.${key}`, undefined, {}, ctx);
      const nested = inputObject(field.type);
      if (nested) await checkInput(nested, given, `${path}.${key}`, ctx);
    }
  }
}

type Resolver = GraphQLFieldResolver<unknown, AdminContext, Record<string, unknown>>;
type ResolverMap = Record<string, unknown>;

/** The resolver maps merged into one, as Apollo would merge them. */
function merge(maps: readonly ResolverMap[]): ResolverMap {
  const out: ResolverMap = {};
  for (const map of maps) {
    for (const [type, value] of Object.entries(map)) {
      const plain = value && typeof value === 'object' && !(value instanceof GraphQLScalarType);
      out[type] = plain ? { ...(out[type] as object | undefined), ...(value as object) } : value;
    }
  }
  return out;
}

/**
 * The resolvers with every guarded field's resolver behind its check: the field's rules (the
 * permission, or ownership), its arguments' and given input fields' rules, an owner's fields, the
 * user acted on. The resolver then runs with the actor naming the permission and the role that gave
 * it, for the audit trail; a service's refusal (no escalation) is FORBIDDEN too.
 */
export function guardResolvers(schema: GraphQLSchema, maps: readonly ResolverMap[]): ResolverMap {
  const unguarded = unguardedOperations(schema);
  if (unguarded.length > 0) throw new Error(`every admin API operation must declare @requires; these do not: ${unguarded.join(', ')}`);
  const resolvers = merge(maps);
  for (const type of Object.values(schema.getTypeMap())) {
    if (!isObjectType(type) || type.name.startsWith('__')) continue;
    for (const field of Object.values(type.getFields())) {
      const what = ROOTS.includes(type.name as (typeof ROOTS)[number]) ? field.name : `${type.name}.${field.name}`;
      const rules = rulesOf(field.astNode, what);
      const argRules = field.args.map((a) => ({
        name: a.name,
        rules: rulesOf(a.astNode, `${what}(${a.name})`),
        input: inputObject(a.type),
      }));
      if (rules.length === 0 && argRules.every((a) => a.rules.length === 0)) continue;
      const own = (resolvers[type.name] ?? {}) as Record<string, Resolver>;
      const inner: Resolver = own[field.name] ?? defaultFieldResolver;
      own[field.name] = async (parent, args, ctx, info) => {
        // The top-level input fields given, for a narrower permission (`@allowedWith`).
        const given: Given[] = argRules.flatMap((a) =>
          a.input && args[a.name] && typeof args[a.name] === 'object' && !Array.isArray(args[a.name])
            ? Object.keys(args[a.name] as object).map((key) => ({
                name: `${a.name}.${key}`,
                allowed: allowedWith(a.input!.getFields()[key]?.astNode),
              }))
            : [],
        );
        let used: Allowed = {};
        let ownedBy: string | undefined;
        for (const rule of rules) {
          const allowed = await allow(rule, what, parent, args, ctx, given);
          if (!used.permission && allowed.permission) used = allowed;
          ownedBy ??= allowed.ownedBy;
        }
        for (const arg of argRules) {
          if (args[arg.name] == null) continue;
          for (const rule of arg.rules) await allow(rule, `${what}(${arg.name})`, parent, args, ctx);
          if (arg.input) await checkInput(arg.input, args[arg.name], arg.name, ctx);
        }
        for (const rule of rules) if (rule.user) await checkTarget(rule.user, args, ctx);
        const actor = { ...ctx.actor, permission: used.permission ?? null, role: used.role ?? null };
        try {
          return await inner(parent, args, { ...ctx, actor, ownedBy }, info);
        } catch (err) {
          if (err instanceof ForbiddenError) throw forbidden(err.message, err.permission);
          throw err;
        }
      };
      resolvers[type.name] = own;
    }
  }
  return resolvers;
}
