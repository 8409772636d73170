// `express4` is an npm alias of express@4 (devDependency) so both majors are tested side by side.
// Express 4 ships no types; its public API used in the tests is the one @types/express describes.
declare module 'express4' {
  import express from 'express';
  export default express;
}
