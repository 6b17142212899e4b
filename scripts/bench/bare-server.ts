// The baseline of the API benchmark: a bare Fastify JSON route, nothing else.
import Fastify from 'fastify';

const app = Fastify({ logger: false });
const payload = { success: true, data: { id: 'bench', status: 'queued' } };
app.get('/bare', async () => payload);
app.post('/bare', async () => payload);
const address = await app.listen({ port: 0, host: '127.0.0.1' });
process.send?.({ address });
