#pragma once
// Response bodies as real OpenAI-compatible servers stream them (shapes taken
// from the hosted API, vLLM, llama.cpp's server and Ollama), for the parser tests.
#include <string>
#include <vector>

namespace agw::tests {

inline std::vector<std::string> recorded_streams() {
  return {
      // Hosted API: role chunk, content, parallel tool calls split at awkward places, usage, [DONE]; LF.
      "data: "
      "{\"id\":\"c1\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"},\"finish_reason\":null}]}\n\n"
      "data: {\"id\":\"c1\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Let me \\u00e9 check\"}}]}\n\n"
      "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"call_a\",\"type\":\"function\","
      "\"function\":{\"name\":\"calculator\",\"arguments\":\"\"}}]}}]}\n\n"
      "data: "
      "{\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"{\\\"expr\"}}]}}]}\n\n"
      "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":1,\"id\":\"call_b\",\"type\":\"function\","
      "\"function\":{\"name\":\"current_time\",\"arguments\":\"{}\"}}]}}]}\n\n"
      "data: "
      "{\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"ession\\\":\\\"2+3\\\"}"
      "\"}}]}}]}\n\n"
      "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"tool_calls\"}]}\n\n"
      "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":20,\"completion_tokens\":9,\"total_tokens\":29}}\n\n"
      "data: [DONE]\n\n",
      // vLLM: reasoning deltas, CRLF, a keep-alive comment, an error object mid-stream.
      ": keep-alive\r\n\r\n"
      "data: {\"choices\":[{\"delta\":{\"reasoning_content\":\"think\"}}]}\r\n\r\n"
      "data: {\"choices\":[{\"delta\":{\"reasoning\":\"ing\"}}]}\r\n\r\n"
      "data: {\"choices\":[{\"delta\":{\"content\":\"Hi\"}}]}\r\n\r\n"
      "data: {\"error\":{\"message\":\"out of memory\",\"type\":\"server_error\",\"code\":500}}\r\n\r\n",
      // Ollama: every call as index 0 with a new id, whole; finish_reason stop; no [DONE]; CR line ends.
      "data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"call_x\",\"function\":{\"name\":\"calculator\","
      "\"arguments\":\"{\\\"expression\\\":\\\"1\\\"}\"}}]}}]}\r\r"
      "data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"call_y\",\"function\":{\"name\":\"current_time\","
      "\"arguments\":\"{}\"}}]}}]}\r\r"
      "data: {\"choices\":[{\"delta\":{},\"finish_reason\":\"stop\"}]}\r\r",
      // llama.cpp: no index on tool calls, no ids, a multi-line data field that is still one JSON value.
      "data: "
      "{\"choices\":[{\"delta\":{\"tool_calls\":[{\"function\":{\"name\":\"calculator\",\"arguments\":\"{\\\"ex\"}}]}}]}\n\n"
      "data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"function\":{\"arguments\":\"pression\\\":\\\"4\\\"}\"}}]}}]}\n\n"
      "data: {\"choices\":\ndata: [{\"delta\":{\"content\":\"ok\"},\"finish_reason\":\"stop\"}]}\n\n"
      "data: [DONE]\n\n",
  };
}

}  // namespace agw::tests
