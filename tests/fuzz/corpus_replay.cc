// Replays every file of a fuzz corpus through LLVMFuzzerTestOneInput, so the
// seed corpus (and every crash turned into a regression input) runs in CI
// without libFuzzer. Usage: replay <dir>...
#include <dirent.h>

#include <cstdint>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

int main(int argc, char** argv) {
  int files = 0;
  for (int a = 1; a < argc; ++a) {
    DIR* dir = opendir(argv[a]);
    if (dir == nullptr) {
      std::fprintf(stderr, "cannot open corpus directory %s\n", argv[a]);
      return 1;
    }
    while (dirent* e = readdir(dir)) {
      std::string name = e->d_name;
      if (name == "." || name == "..") continue;
      std::ifstream in(std::string(argv[a]) + "/" + name, std::ios::binary);
      std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)),
                                 std::istreambuf_iterator<char>());
      LLVMFuzzerTestOneInput(bytes.data(), bytes.size());
      ++files;
    }
    closedir(dir);
  }
  std::printf("replayed %d corpus inputs\n", files);
  return files > 0 ? 0 : 1;  // an empty corpus is a setup error
}
