/**
 * The admin console's start: the canonical address first (the issuer's origin, where the redirect URI
 * is registered), then the callback, the signed-out page, or a sign-in for anything else.
 */
import { render, type ComponentChildren } from 'preact';
import { useState } from 'preact/hooks';
import { completeSignIn, signIn } from './auth/session.ts';
import { consoleBase, issuer } from './config.ts';
import { App } from './ui/app.tsx';
import { navigate, route } from './ui/router.ts';
import './styles.css';

function Message({ title, children }: { title: string; children: ComponentChildren }) {
  document.title = `${title} · Latchkey admin`;
  return (
    <main id="main" class="narrow">
      <h1>{title}</h1>
      {children}
    </main>
  );
}

function SignInAgain({ label }: { label: string }) {
  const [busy, setBusy] = useState(false);
  return (
    <button
      type="button"
      disabled={busy}
      onClick={() => {
        setBusy(true);
        void signIn('/clients');
      }}
    >
      {label}
    </button>
  );
}

const root = document.getElementById('app')!;
const { page } = route.get();
const here = new URL(location.href);

if (here.origin !== new URL(issuer).origin) {
  // Reached by another name (an IP, a proxy's address): go to the registered one, or the sign-in cannot come back here.
  location.replace(`${consoleBase}/${page}${here.search}`);
} else if (page === 'signed-out') {
  render(
    <Message title="Signed out">
      <p>You have signed out of Latchkey. The admin console keeps nothing of your session.</p>
      <SignInAgain label="Sign in again" />
    </Message>,
    root,
  );
} else if (page === 'callback') {
  render(<Message title="Signing in…">{null}</Message>, root);
  completeSignIn(here.searchParams).then(
    (returnTo) => {
      navigate(`${new URL(consoleBase).pathname}${returnTo}`, true);
      render(<App />, root);
    },
    (err: Error) => {
      history.replaceState(null, '', `${new URL(consoleBase).pathname}/callback`);
      render(
        <Message title="The sign-in did not complete">
          <p class="error" role="alert">
            {err.message}
          </p>
          <SignInAgain label="Try again" />
        </Message>,
        root,
      );
    },
  );
} else {
  render(<Message title="Signing in…">{null}</Message>, root);
  void signIn(`/${page}${here.search}`);
}
