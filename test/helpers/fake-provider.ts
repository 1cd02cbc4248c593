// The fake provider of Tollgate's own tests is the testing kit's.
export {
  anthropicStream,
  geminiStream,
  mistralStream,
  openaiReply,
  openaiStream,
  startFakeProvider,
  type FakeProvider,
  type FakeReply,
  type FakeRequest,
} from '../../testing/fake-provider';
