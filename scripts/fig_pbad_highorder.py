"""High-order PBAD at large dt: one chain run, prints energy/convergence summary.
Usage: python scripts/fig_pbad_highorder.py LINKS DT [pbad3|pbad4] [T]   e.g. 10 0.05 pbad3 10"""
import sys,time; sys.path[:0]=[str(__import__('pathlib').Path(__file__).resolve().parents[1]), str(__import__('pathlib').Path(__file__).resolve().parents[1] / 'models')]
import numpy as np, pbsim, pbsim_models
from pbsim.integrators import State, make
N=int(sys.argv[1]); dt=float(sys.argv[2]); name=sys.argv[3] if len(sys.argv)>3 else 'pbad3'
m=pbsim_models.chain(N,joint='ball2')
integ=make(name,m,**({'init':sys.argv[5]} if len(sys.argv)>5 else {}))
s=State.make(m,m.neutral())
t=time.perf_counter(); E=[]; conv=[]; its=[]
for k in range(int(round(float(sys.argv[4] if len(sys.argv)>4 else 10)/dt))):
    s,d=integ.step(s,None,dt); E.append(d.energy[0]); conv.append(d.converged[0]); its.append(d.iterations[0])
    if not np.isfinite(E[-1]): break
E=np.array(E); print(N,dt,name,'steps',len(E),'E end',E[-1],'max',np.nanmax(E),'min',np.nanmin(E),'conv',np.mean(conv),'its',np.mean(its),'wall',time.perf_counter()-t)
print(np.round(E[::max(1,len(E)//20)],3))
