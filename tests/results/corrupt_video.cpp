// results_corrupt_video PATH [ID]: flips the first byte of one stored video in place, leaving
// its row (and its recorded video_sha256) as it is, and prints the id. PATH is an output
// folder or a rank file; without ID, the first ok id (sorted) that has a video is taken.
// A test tool for the end-to-end isolation check (isolation_e2e.sh), not a product.

#include <iostream>

#include "omnidp/common/error.hpp"
#include "omnidp/results/hdf5.hpp"
#include "omnidp/results/result_files.hpp"
#include "omnidp/results/table.hpp"

int main(int argc, char** argv) {
  using namespace omnidp::results;
  if (argc < 2 || argc > 3) {
    std::cerr << "usage: results_corrupt_video PATH [ID]\n";
    return 2;
  }
  try {
    const std::filesystem::path path = argv[1];
    std::vector<std::filesystem::path> files = std::filesystem::is_directory(path)
                                                   ? list_rank_files(path)
                                                   : std::vector<std::filesystem::path>{path};
    std::vector<StoredRow> rows;
    for (std::size_t i = 0; i < files.size(); ++i) {
      auto part = read_stored_rows(files[i], i);
      rows.insert(rows.end(), part.begin(), part.end());
    }
    rows = select_rows(std::move(rows));
    for (const auto& row : rows) {
      if (!row.video_present || (argc == 3 && row.record.id != argv[2])) continue;
      const h5::File file = h5::open_file(row.file.string(), true);
      omnidp::Video video = read_video(file.id(), row.record.id);
      video.data[0] ^= 0xFFU;
      const h5::Dataset dataset = h5::open_dataset(file.id(), video_path(row.record.id));
      h5::call("H5Dwrite", row.record.id, [&] {
        return H5Dwrite(dataset.id(), H5T_NATIVE_UINT8, H5S_ALL, H5S_ALL, H5P_DEFAULT,
                        video.data.data());
      });
      std::cout << row.record.id << "\n";
      return 0;
    }
    std::cerr << "results_corrupt_video: no stored video to corrupt in " << path << "\n";
    return 1;
  } catch (const omnidp::Error& e) {
    std::cerr << "results_corrupt_video: " << e.what() << "\n";
    return 1;
  }
}
