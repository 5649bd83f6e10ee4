"""Write rendered frames to a video file: ``pbsim view MODEL --record out.mp4 --frames N``.

``.mp4`` (H.264) is encoded by an ffmpeg executable (the one shipped by ``imageio-ffmpeg``, in the
viewer extra, else ``ffmpeg`` on PATH) fed raw RGB frames through a pipe, so frames are never all
held in memory; ``.gif`` is written by Pillow (frames kept until ``close``: meant for short clips).
"""

from __future__ import annotations

import os
import shutil
import subprocess

import numpy as np

from pbsim.errors import InputError

FORMATS = (".mp4", ".gif")


def ffmpeg_exe() -> str | None:
    """Path of an ffmpeg executable, or None."""
    try:
        import imageio_ffmpeg

        return imageio_ffmpeg.get_ffmpeg_exe()
    except Exception:  # noqa: BLE001  (not installed, or its binary missing)
        return shutil.which("ffmpeg")


class FrameRecorder:
    """``add(rgb)`` frames (H, W, 3) uint8 of one size, then ``close()``."""

    def __init__(self, path, fps: float = 60.0):
        self.path = os.fspath(path)
        self.ext = os.path.splitext(self.path)[1].lower()
        if self.ext not in FORMATS:
            raise InputError(f"--record {self.path!r}: unsupported video format {self.ext!r}; use one of {FORMATS}")
        if not np.isfinite(fps) or fps <= 0:
            raise InputError(f"record fps must be positive, got {fps!r}")
        self.fps = float(fps)
        self.exe = None
        if self.ext == ".mp4":
            self.exe = ffmpeg_exe()
            if self.exe is None:
                raise InputError(
                    f"--record {self.path!r}: writing .mp4 needs ffmpeg "
                    "(pip install imageio-ffmpeg, part of 'pbsim[viewer]'), or record a .gif"
                )
        folder = os.path.dirname(os.path.abspath(self.path))
        os.makedirs(folder, exist_ok=True)
        self.frames = []
        self.proc = None
        self.shape = None
        self.count = 0

    def add(self, rgb: np.ndarray) -> None:
        rgb = np.ascontiguousarray(rgb, dtype=np.uint8)
        if self.shape is None:
            self.shape = rgb.shape
        elif rgb.shape != self.shape:
            raise InputError(f"--record: frame size changed from {self.shape} to {rgb.shape} (window resized?)")
        if self.ext == ".gif":
            self.frames.append(rgb)
        else:
            if self.proc is None:
                self.proc = self._open(rgb.shape)
            h, w = rgb.shape[:2]
            self.proc.stdin.write(rgb[: h - h % 2, : w - w % 2].tobytes())  # yuv420p needs even sizes
        self.count += 1

    def _open(self, shape):
        h, w = shape[0] - shape[0] % 2, shape[1] - shape[1] % 2
        cmd = [
            self.exe,
            "-y",
            "-loglevel",
            "error",
            "-f",
            "rawvideo",
            "-pix_fmt",
            "rgb24",
            "-s",
            f"{w}x{h}",
            "-r",
            f"{self.fps:g}",
            "-i",
            "-",
            "-an",
            "-vcodec",
            "libx264",
            "-pix_fmt",
            "yuv420p",
            self.path,
        ]
        return subprocess.Popen(cmd, stdin=subprocess.PIPE, stderr=subprocess.PIPE)

    def close(self) -> str:
        """Finish the file; returns its path."""
        if self.ext == ".gif":
            if not self.frames:
                raise InputError(f"--record {self.path!r}: no frames were rendered")
            from PIL import Image

            imgs = [Image.fromarray(f) for f in self.frames]
            imgs[0].save(self.path, save_all=True, append_images=imgs[1:], duration=int(round(1000 / self.fps)), loop=0)
            self.frames = []
        elif self.proc is not None:
            self.proc.stdin.close()
            err = self.proc.stderr.read().decode(errors="replace")
            if self.proc.wait() != 0:
                raise InputError(f"--record {self.path!r}: ffmpeg failed: {err.strip()[-500:]}")
            self.proc = None
        else:
            raise InputError(f"--record {self.path!r}: no frames were rendered")
        return self.path
