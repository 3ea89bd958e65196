/**
 * On SQLite one connection serves knex and the fast statements; while a knex transaction is open on
 * it (an admin change), a fast statement must not slip into that transaction, so it waits here.
 */
export class TransactionGate {
  private open: Promise<void> | undefined;

  get busy(): boolean {
    return this.open !== undefined;
  }

  /**
   * Resolves when no transaction holds the gate. Another may take it before the caller resumes, so a
   * caller loops (`while (gate.busy) await gate.wait()`) and then runs its statement at once, in the
   * same synchronous stretch as the last check.
   */
  async wait(): Promise<void> {
    while (this.open) await this.open;
  }

  async hold<T>(work: () => Promise<T>): Promise<T> {
    // Checked and claimed in one synchronous stretch: two callers can never both get past here.
    while (this.open) await this.open;
    let release!: () => void;
    this.open = new Promise((r) => (release = r));
    try {
      return await work();
    } finally {
      this.open = undefined;
      release();
    }
  }
}
