/** ejs ships no types; the view test only hands it to @fastify/view. */
declare module 'ejs';
