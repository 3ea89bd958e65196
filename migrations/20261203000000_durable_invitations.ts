import type { Knex } from 'knex';

/**
 * SCIM invitations waiting to be mailed (docs/scim-provisioning.md "How SCIM users sign in"): a row is
 * written in the transaction that creates the user, and deleted once the invitation went out, so a
 * restart between the two loses none.
 * - `user_id`: the invitee; the row goes with the user.
 * - `request_id`, `ip`: the SCIM request that created the user, for the invitation's audit event.
 * - `leased_until`: set by the process mailing it; a process that died meanwhile leaves a lease that
 *   runs out, and the invitation is taken up again.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('scim_invitations', (t) => {
    t.string('user_id', 36).primary().references('id').inTable('users').onDelete('CASCADE');
    t.string('request_id', 128).nullable();
    t.string('ip', 64).nullable();
    t.bigInteger('created_at').notNullable();
    t.bigInteger('leased_until').nullable();
    t.index(['created_at']);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('scim_invitations');
}
