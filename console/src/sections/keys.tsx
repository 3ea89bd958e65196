/** The signing keys of the JWKS (backends:read), and a rotation (keys:manage: the new key is published at once and signs later). */
import { useState } from 'preact/hooks';
import { request } from '../api/graphql.ts';
import { RotateSigningKeysMutation, SigningKeysQuery, type SigningAlgorithm } from '../api/generated.ts';
import { useCan } from '../auth/permissions.ts';
import { Checkbox, Dialog, ErrorNote, Loading, useAction, useLoad, when, Notice } from '../ui/kit.tsx';
import { Table, type Column } from '../ui/table.tsx';

const ALGORITHMS: SigningAlgorithm[] = ['RS256', 'ES256'];

function state(k: { signing: boolean; retiredAt?: string | null; activatesAt: string }): string {
  if (k.signing) return 'signing';
  if (k.retiredAt && Date.parse(k.retiredAt) <= Date.now()) return 'retired';
  if (Date.parse(k.activatesAt) > Date.now()) return 'waiting';
  return 'published';
}

const columns: Array<Column<SigningKeysQuery['signingKeys'][number]>> = [
  { header: 'Key ID', rowHeader: true, cell: (k) => <code>{k.kid}</code> },
  { header: 'Algorithm', cell: (k) => k.algorithm },
  { header: 'State', cell: (k) => <span class={`badge ${k.signing ? 'on' : ''}`}>{state(k)}</span> },
  { header: 'Created', class: 'when', cell: (k) => when(k.createdAt) },
  { header: 'Signs from', class: 'when', cell: (k) => when(k.activatesAt) },
  { header: 'Stops signing', class: 'when', cell: (k) => when(k.retiredAt) },
];

export function KeysSection() {
  const list = useLoad(() => request(SigningKeysQuery, {}), []);
  const [asking, setAsking] = useState(false);
  const [algorithms, setAlgorithms] = useState<SigningAlgorithm[]>(ALGORITHMS);
  const [notice, setNotice] = useState<string>();
  const rotate = useAction();
  const can = useCan();
  const keys = list.data?.signingKeys;

  async function confirmed(e: Event) {
    e.preventDefault();
    const made = await rotate.run(async () => (await request(RotateSigningKeysMutation, { algorithms })).rotateSigningKeys);
    if (!made) return;
    setAsking(false);
    setNotice(made.map((k) => `New ${k.algorithm} key ${k.kid} signs from ${when(k.activatesAt)}.`).join(' '));
    list.reload();
  }

  return (
    <section aria-busy={list.loading}>
      <div class="toolbar">
        <p class="lede">A new key is published at once and signs only after the publish delay, so every verifier has it first.</p>
        {can('keys:manage') ? (
          <button
            type="button"
            onClick={() => {
              rotate.clear();
              setAsking(true);
            }}
          >
            Rotate keys
          </button>
        ) : null}
      </div>
      <Notice text={notice} />
      <ErrorNote error={list.error} />
      {list.loading && !keys ? <Loading>Loading keys…</Loading> : null}
      <Table label="Signing keys" columns={columns} rows={keys} rowKey={(k) => k.kid} empty="No signing keys yet." />
      {asking ? (
        <Dialog title="Rotate the signing keys?" onClose={() => setAsking(false)}>
          <form onSubmit={confirmed}>
            <fieldset class="field">
              <legend>Algorithms</legend>
              {ALGORITHMS.map((a) => (
                <Checkbox
                  key={a}
                  id={`rotate-${a}`}
                  label={a}
                  checked={algorithms.includes(a)}
                  onChange={(on) => setAlgorithms((x) => (on ? [...x, a] : x.filter((y) => y !== a)))}
                />
              ))}
            </fieldset>
            <p>The keys they replace keep verifying what they signed until it has expired.</p>
            <ErrorNote error={rotate.error} labels={{ algorithms: 'Algorithms' }} />
            <div class="actions">
              <button type="submit" disabled={rotate.busy || algorithms.length === 0}>
                {rotate.busy ? 'Rotating…' : 'Rotate'}
              </button>
              <button type="button" class="secondary" onClick={() => setAsking(false)}>
                Cancel
              </button>
            </div>
          </form>
        </Dialog>
      ) : null}
    </section>
  );
}
