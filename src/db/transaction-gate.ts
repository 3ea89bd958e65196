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
   * Runs `statement` once no transaction holds the gate. Another transaction may take the gate while
   * this one waits, so it checks again after each wait, and runs `statement` in the same synchronous
   * stretch as the last check (hence a synchronous `statement`: an await would let a transaction in).
   */
  async whenFree<T>(statement: () => T): Promise<T> {
    while (this.open) await this.open;
    return statement();
  }

  async hold<T>(work: () => Promise<T>): Promise<T> {
    // Checked and claimed in one synchronous stretch: two callers can never both get past here.
    const release = await this.whenFree(() => this.claim());
    try {
      return await work();
    } finally {
      release();
    }
  }

  private claim(): () => void {
    let resolve!: () => void;
    this.open = new Promise((r) => (resolve = r));
    return () => {
      this.open = undefined;
      resolve();
    };
  }
}
