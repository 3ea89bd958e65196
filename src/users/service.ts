import { randomUUID } from 'node:crypto';
import { hashPassword } from '../crypto/passwords.ts';
import { randomToken } from '../crypto/tokens.ts';
import type { User, UserQueries } from './queries.ts';

export interface CreateUserInput {
  username: string;
  password: string;
  email?: string | null;
  displayName?: string | null;
  roles?: string[];
  groups?: string[];
}

export interface UpdateUserInput {
  username?: string | null;
  email?: string | null;
  displayName?: string | null;
  roles?: string[] | null;
  disabled?: boolean | null;
}

export class UserInputError extends Error {
  constructor(
    readonly field: string,
    message: string,
  ) {
    super(`${field}: ${message}`);
  }
}

function checkUsername(raw: string): string {
  const username = raw.trim();
  if (!/^[^\s\x00-\x1f]{1,255}$/.test(username)) throw new UserInputError('username', 'must be 1 to 255 characters, no spaces');
  return username;
}

function checkPassword(password: string): void {
  if (password.length < 8 || password.length > 1024) throw new UserInputError('password', 'must be 8 to 1024 characters');
}

function checkEmail(email: string | null | undefined): string | null | undefined {
  if (email === '') return null;
  if (email == null) return email;
  if (email.length > 320 || !/^[^\s@]+@[^\s@]+$/.test(email)) throw new UserInputError('email', `${JSON.stringify(email)} is not an email address`);
  return email;
}

function checkDisplayName(name: string | null | undefined): string | null {
  const trimmed = name?.trim();
  if (!trimmed) return null;
  if (trimmed.length > 255 || /[\x00-\x1f\x7f]/.test(trimmed)) throw new UserInputError('displayName', 'must be at most 255 characters, no control characters');
  return trimmed;
}

function checkRoles(roles: string[]): string[] {
  for (const r of roles) if (!/^[\w:.-]{1,64}$/.test(r)) throw new UserInputError('roles', `${JSON.stringify(r)} is not a valid role name`);
  return [...new Set(roles)];
}

/** Users of the built-in database backend, whose id is `localBackend`. */
export const userService = (queries: UserQueries, localBackend: string) => ({
  localBackend,
  find: queries.find,

  async create(input: CreateUserInput): Promise<User> {
    const username = checkUsername(input.username);
    checkPassword(input.password);
    checkEmail(input.email);
    if (await queries.findByUsername(localBackend, username)) throw new UserInputError('username', `${username} is taken`);
    const id = randomUUID();
    const now = Date.now();
    const user: User = {
      id,
      backend: localBackend,
      externalId: id,
      username,
      email: input.email ?? null,
      displayName: checkDisplayName(input.displayName),
      passwordHash: await hashPassword(input.password),
      roles: checkRoles(input.roles ?? []),
      groups: input.groups ?? [],
      disabled: false,
      createdAt: now,
      updatedAt: now,
    };
    await queries.insert(user);
    return user;
  },

  /** Users of other backends are read-only here but for roles and disabled (their profile is the directory's). */
  async update(id: string, input: UpdateUserInput): Promise<User | undefined> {
    const user = await queries.find(id);
    if (!user) return undefined;
    const local = user.backend === localBackend;
    const next = { ...user, updatedAt: Date.now() };
    for (const field of ['username', 'email', 'displayName'] as const) {
      if (input[field] !== undefined && !local) {
        throw new UserInputError(field, `is read-only: the user comes from backend "${user.backend}"`);
      }
    }
    if (input.username != null) {
      next.username = checkUsername(input.username);
      const clash = await queries.findByUsername(localBackend, next.username);
      if (clash && clash.id !== id) throw new UserInputError('username', `${next.username} is taken`);
    }
    if (input.email !== undefined) next.email = checkEmail(input.email) ?? null;
    if (input.displayName !== undefined) next.displayName = checkDisplayName(input.displayName);
    if (input.roles != null) next.roles = checkRoles(input.roles);
    if (input.disabled != null) next.disabled = input.disabled;
    await queries.update(next);
    return next;
  },

  async setPassword(id: string, password: string): Promise<User | undefined> {
    const user = await queries.find(id);
    if (!user) return undefined;
    if (user.backend !== localBackend) throw new UserInputError('password', `is read-only: the user comes from backend "${user.backend}"`);
    checkPassword(password);
    const next = { ...user, passwordHash: await hashPassword(password), updatedAt: Date.now() };
    await queries.update(next);
    return next;
  },

  remove: queries.remove,

  /**
   * SPEC 1: when no admin exists, create one. Returns the generated password when none was given,
   * for the caller to print once; it is never logged or stored in plain text.
   */
  async ensureAdmin(username: string, password?: string): Promise<{ created: boolean; generatedPassword?: string }> {
    if (await queries.anyWithRole('admin')) return { created: false };
    const generated = password ? undefined : randomToken(18);
    const existing = await queries.findByUsername(localBackend, username);
    if (existing) {
      await queries.update({
        ...existing,
        roles: [...new Set([...existing.roles, 'admin'])],
        passwordHash: await hashPassword(password ?? generated!),
        updatedAt: Date.now(),
      });
    } else {
      await this.create({ username, password: password ?? generated!, roles: ['admin'], displayName: 'Administrator' });
    }
    return { created: true, generatedPassword: generated };
  },
});

export type UserService = ReturnType<typeof userService>;
