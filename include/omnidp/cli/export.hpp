#pragma once
// omni-dp-export <results.h5|dir> --format mp4|png|gif --out DIR [--ids a,b]: writes stored
// videos as files people can look at (docs/export.md). Exit 0 when every selected video was
// written, 1 when some could not be (failed request, no stored video), 2 on usage or read
// errors and for MP4/GIF in a build without FFmpeg.
namespace omnidp::cli {
[[nodiscard]] int export_main(int argc, char** argv);
}
