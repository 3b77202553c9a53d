"""Prints the number of pixels of a PNG that differ from its corner pixel
(the background), read with ParaView's VTK: pvpython nonblank.py IMAGE.png"""
import sys

from vtkmodules.numpy_interface import dataset_adapter as dsa
from vtkmodules.vtkIOImage import vtkPNGReader

r = vtkPNGReader()
r.SetFileName(sys.argv[1])
r.Update()
img = r.GetOutput()
px = dsa.vtkDataArrayToVTKArray(img.GetPointData().GetScalars(), None)
px = px.reshape(px.shape[0], -1)
print((abs(px.astype(int) - px[0].astype(int)).sum(axis=1) > 0).sum(), px.shape[0])
