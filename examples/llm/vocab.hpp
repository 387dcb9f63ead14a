// lutkit example engine — the vocabulary of a GGUF file, for turning token ids into text:
//   "llama" (SentencePiece): U+2581 "▁" is a space, "<0xXX>" byte tokens are that byte;
//   "gpt2" (byte-level BPE, Llama 3, Qwen): each character of a piece stands for one byte through
//   GPT-2's byte-to-character table (printable bytes map to themselves, the others to U+0100 + n).
// Control tokens (type 3) print nothing. Tokenizing text is not done: prompts are token ids.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <lutkit/lutkit.hpp>

namespace llm {

struct vocab {
  enum class kind { none, spm, bpe } k = kind::none;
  std::vector<std::string> pieces;
  std::vector<int32_t> types;
  int32_t bos = -1, eos = -1;
  uint16_t bpe_byte[512] = {};  // character (< 512) -> byte + 1 (0: not a byte character)

  static vocab from(const lutkit::gguf::file& f) {
    vocab v;
    if (!f.contains("tokenizer.ggml.tokens")) return v;
    const std::string_view model = f.contains("tokenizer.ggml.model") ? f.get_string("tokenizer.ggml.model") : "";
    v.k = model == "gpt2" ? kind::bpe : kind::spm;
    for (std::string_view s : f.get_array("tokenizer.ggml.tokens").to_vector<std::string_view>()) v.pieces.emplace_back(s);
    if (f.contains("tokenizer.ggml.token_type")) v.types = f.get_array("tokenizer.ggml.token_type").to_vector<int32_t>();
    if (f.contains("tokenizer.ggml.bos_token_id")) v.bos = int32_t(f.get("tokenizer.ggml.bos_token_id").to_uint());
    if (f.contains("tokenizer.ggml.eos_token_id")) v.eos = int32_t(f.get("tokenizer.ggml.eos_token_id").to_uint());
    // GPT-2's table: bytes 33..126, 161..172, 174..255 are themselves, the rest U+0100 + n in order
    int n = 0;
    for (int b = 0; b < 256; ++b) {
      const bool printable = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174 && b <= 255);
      v.bpe_byte[printable ? b : 256 + n++] = uint16_t(b + 1);
    }
    return v;
  }

  // the bytes token id stands for
  std::string piece(int32_t id) const {
    if (id < 0 || std::size_t(id) >= pieces.size()) return "";
    if (std::size_t(id) < types.size() && types[std::size_t(id)] == 3) return "";  // control
    const std::string& p = pieces[std::size_t(id)];
    std::string out;
    if (k == kind::spm) {
      if (p.size() == 6 && p.compare(0, 3, "<0x") == 0 && p[5] == '>')
        return std::string(1, char(std::stoi(p.substr(3, 2), nullptr, 16)));
      for (std::size_t i = 0; i < p.size(); ++i) {
        if (i + 2 < p.size() && uint8_t(p[i]) == 0xE2 && uint8_t(p[i + 1]) == 0x96 && uint8_t(p[i + 2]) == 0x81) {
          out += ' ';
          i += 2;
        } else {
          out += p[i];
        }
      }
      return out;
    }
    // byte-level BPE: decode UTF-8 code points, map each back to its byte
    for (std::size_t i = 0; i < p.size();) {
      const uint8_t c = uint8_t(p[i]);
      uint32_t cp = c;
      std::size_t len = 1;
      if (c >= 0xC0 && c < 0xE0 && i + 1 < p.size()) cp = ((c & 0x1Fu) << 6) | (uint8_t(p[i + 1]) & 0x3Fu), len = 2;
      else if (c >= 0xE0 && c < 0xF0 && i + 2 < p.size())
        cp = ((c & 0x0Fu) << 12) | ((uint8_t(p[i + 1]) & 0x3Fu) << 6) | (uint8_t(p[i + 2]) & 0x3Fu), len = 3;
      if (cp < 512 && bpe_byte[cp]) out += char(bpe_byte[cp] - 1);
      else out.append(p, i, len);
      i += len;
    }
    return out;
  }
};

}  // namespace llm
