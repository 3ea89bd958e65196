import type { RequestHandler } from 'express';
import type { AppContext } from '../../context.ts';
import { sendPageError } from '../page-errors.ts';

/** `GET /saml/v20/metadata` (docs/saml-applications.md): the IdP's EntityDescriptor, for SPs to import. */
export function samlMetadataHandler(ctx: AppContext): RequestHandler {
  return async (req, res) => {
    try {
      res.setHeader('Cache-Control', 'public, max-age=300');
      res
        .status(200)
        .type('application/samlmetadata+xml')
        .send(await ctx.saml.metadata());
    } catch (err) {
      sendPageError(ctx, req, res, err);
    }
  };
}
