"""Orbit / pan / zoom camera (z up), plain numpy."""

from __future__ import annotations

import math

import numpy as np


def perspective(fovy_deg, aspect, near, far):
    f = 1.0 / math.tan(math.radians(fovy_deg) / 2)
    P = np.zeros((4, 4))
    P[0, 0], P[1, 1] = f / aspect, f
    P[2, 2], P[2, 3] = (far + near) / (near - far), 2 * far * near / (near - far)
    P[3, 2] = -1.0
    return P


def look_at(eye, target, up=(0.0, 0.0, 1.0)):
    eye, target, up = (np.asarray(a, float) for a in (eye, target, up))
    f = target - eye
    f /= np.linalg.norm(f)
    s = np.cross(f, up)
    s /= max(np.linalg.norm(s), 1e-12)
    u = np.cross(s, f)
    V = np.eye(4)
    V[0, :3], V[1, :3], V[2, :3] = s, u, -f
    V[:3, 3] = -V[:3, :3] @ eye
    return V


class OrbitCamera:
    def __init__(self, target=(0.0, 0.0, 0.5), distance=3.0, yaw=-60.0, pitch=20.0, fovy=45.0):
        self.target = np.array(target, float)
        self.distance, self.yaw, self.pitch, self.fovy = float(distance), float(yaw), float(pitch), fovy

    @property
    def eye(self):
        y, p = math.radians(self.yaw), math.radians(self.pitch)
        d = np.array([math.cos(p) * math.cos(y), math.cos(p) * math.sin(y), math.sin(p)])
        return self.target + self.distance * d

    def orbit(self, dx, dy):
        self.yaw -= 0.3 * dx
        self.pitch = float(np.clip(self.pitch - 0.3 * dy, -89.0, 89.0))

    def pan(self, dx, dy, height_px):
        V = self.view()
        scale = 2 * self.distance * math.tan(math.radians(self.fovy) / 2) / max(height_px, 1)
        self.target -= scale * (dx * V[0, :3] + dy * V[1, :3])

    def zoom(self, steps):
        self.distance = float(np.clip(self.distance * 0.9**steps, 0.05, 500.0))

    def follow(self, point, alpha=0.2):
        self.target += alpha * (np.asarray(point, float) - self.target)

    def view(self):
        return look_at(self.eye, self.target)

    def projection(self, aspect):
        return perspective(self.fovy, aspect, 0.02 * self.distance, 200.0 * self.distance)
