import { IncomingMessage, ServerResponse, type ServerOptions } from 'node:http';
import type { Socket } from 'node:net';
import type { Express } from 'express';

type Messages = Pick<ServerOptions, 'IncomingMessage' | 'ServerResponse'>;

const isClass = (f: unknown) => /^class\b/.test(Function.prototype.toString.call(f));

/**
 * The server's request and response classes, made with the app's Express prototypes (`app.request`,
 * `app.response`) from the start. Why: Express gives every request those prototypes by
 * Object.setPrototypeOf on the live objects (app.handle), which V8 pays for twice: the objects change
 * shape on every request, and the young objects around them outlive their request and are promoted to
 * the old generation (an Express hello promoted about 60 MB a second under load; with these classes
 * almost nothing, and it served three times as many requests). When the prototype already is the one
 * Express sets, its setPrototypeOf changes nothing, so every route, Express's router or not, behaves as
 * before.
 *
 * Node's constructors are called on the new object (`IncomingMessage.call(this, …)`), as Node's own
 * subclasses did before classes: Reflect.construct with another new.target would do the same but
 * takes V8's slow path, and was slower than Express's own way. Should a later Node make them classes,
 * which cannot be called so, the server keeps Node's own classes and Express's way.
 */
export function expressMessages(app: Express): Messages {
  if (isClass(IncomingMessage) || isClass(ServerResponse)) return {};
  function ExpressRequest(this: IncomingMessage, socket: Socket) {
    (IncomingMessage as unknown as (this: IncomingMessage, socket: Socket) => void).call(this, socket);
  }
  ExpressRequest.prototype = app.request;
  function ExpressResponse(this: ServerResponse, req: IncomingMessage, options?: unknown) {
    (ServerResponse as unknown as (this: ServerResponse, req: IncomingMessage, options?: unknown) => void).call(this, req, options);
  }
  ExpressResponse.prototype = app.response;
  return {
    IncomingMessage: ExpressRequest as unknown as typeof IncomingMessage,
    ServerResponse: ExpressResponse as unknown as typeof ServerResponse,
  };
}
