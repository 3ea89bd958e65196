/** The preview (docs/access-and-claims.md "Preview"): what an application would be told about one user, as saved now. */
import { request } from '../api/graphql.ts';
import { PreviewAccessQuery, type PreviewAccessQuery as Answer } from '../api/generated.ts';
import { ErrorNote, Loading, useLoad } from '../ui/kit.tsx';
import { type Option, UserChooser } from '../ui/pickers.tsx';

/** Why a user may or may not use the application, in words: the preview's `reason`. */
export function why(reason: string): string {
  if (reason === 'everyone') return 'the application is open to everyone who can sign in';
  if (reason === 'user') return 'the user is assigned by name';
  if (reason.startsWith('group:')) return `a member of the group ${reason.slice('group:'.length)}`;
  if (reason.startsWith('backend:')) return `a user of the backend ${reason.slice('backend:'.length)}`;
  if (reason === 'not_assigned') return 'not assigned: not named, in none of the groups, from none of the backends';
  if (reason === 'disabled') return 'the user is disabled';
  return reason;
}

const json = (value: unknown) => JSON.stringify(value ?? {}, null, 2);

function Claims({ id, title, value }: { id: string; title: string; value: unknown }) {
  return (
    <section aria-labelledby={id} class="claims-block">
      <h4 id={id}>{title}</h4>
      <pre class="claims">
        <code>{json(value)}</code>
      </pre>
    </section>
  );
}

function Told({ id, answer, kind }: { id: string; answer: Answer['previewAccess']; kind: 'client' | 'saml' }) {
  if (kind === 'client') {
    return (
      <div class="preview-grid">
        <Claims id={`${id}-id-token`} title="id_token" value={answer.idTokenClaims} />
        <Claims id={`${id}-userinfo`} title="userinfo" value={answer.userinfoClaims} />
        <Claims id={`${id}-access-token`} title="Access token (JWT) and introspection" value={answer.accessTokenClaims} />
      </div>
    );
  }
  const attributes = answer.samlAttributes ?? [];
  return (
    <>
      <dl class="pairs">
        <dt>NameID</dt>
        <dd>
          <code id={`${id}-name-id`}>{answer.samlNameId ?? '—'}</code>
        </dd>
      </dl>
      {attributes.length ? (
        <table class="list saml-attributes" aria-label="Attributes">
          <thead>
            <tr>
              <th scope="col">Attribute</th>
              <th scope="col">Values</th>
            </tr>
          </thead>
          <tbody>
            {attributes.map((a) => (
              <tr key={a.name}>
                <th scope="row" data-label="Attribute">
                  <code>{a.name}</code>
                  {a.friendlyName ? <span class="detail"> ({a.friendlyName})</span> : null}
                </th>
                <td data-label="Values">
                  <ul class="values">
                    {a.values.map((v) => (
                      <li key={v}>
                        <code>{v}</code>
                      </li>
                    ))}
                  </ul>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      ) : (
        <p class="empty">No attributes.</p>
      )}
    </>
  );
}

/**
 * A user picker and the preview for the user picked: allowed and why, then what the application is
 * told. `version` changes after each save, so the preview follows what is stored.
 */
export function Preview(p: {
  /** Ids in the page: each tab has its own picker. */
  id: string;
  kind: 'client' | 'saml';
  applicationId: string;
  applicationName: string;
  user: Option | undefined;
  onUser: (user: Option) => void;
  version: number;
  /** Whether the claims or attributes are open at first (the Claims and Attributes tabs) or folded (Access). */
  toldOpen: boolean;
}) {
  const answer = useLoad(() => {
    const user = p.user;
    return user
      ? request(PreviewAccessQuery, { applicationId: p.applicationId, userId: user.value }).then((r) => ({ user, told: r.previewAccess }))
      : Promise.resolve(undefined);
  }, [p.user?.value, p.applicationId, p.version]);
  // Only the answer for the user picked now: while another user's loads, the last one's must not be
  // shown under the new name.
  const a = answer.data && answer.data.user.value === p.user?.value ? answer.data.told : undefined;
  const told = p.kind === 'client' ? 'Claims it receives' : 'NameID and attributes it receives';
  return (
    <section class="panel preview" aria-labelledby={`${p.id}-title`} aria-busy={answer.loading}>
      <h3 id={`${p.id}-title`}>Preview</h3>
      <p class="hint">What {p.applicationName} would be told about a user now, as saved; nothing is issued or recorded.</p>
      <UserChooser id={`${p.id}-user`} label="Preview for user" user={p.user} onChange={p.onUser} />
      <ErrorNote error={answer.error} />
      {p.user && !a && !answer.error ? <Loading>Loading the preview…</Loading> : null}
      {p.user && a ? (
        <div id={`${p.id}-result`}>
          <p class={`verdict ${a.allowed ? 'allowed' : 'refused'}`} role="status">
            <strong>
              {a.allowed ? `${p.user.label} may use ${p.applicationName}` : `${p.user.label} may not use ${p.applicationName}`}
            </strong>
            : {why(a.reason)}.
          </p>
          {a.allowed ? null : (
            <p class="hint">Refused, the user gets nothing; below is what the application would be told if they were let in.</p>
          )}
          <details class="told" open={p.toldOpen}>
            <summary>{told}</summary>
            <Told id={p.id} answer={a} kind={p.kind} />
          </details>
        </div>
      ) : null}
    </section>
  );
}
